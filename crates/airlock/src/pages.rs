//! Paginated lists (`tools/list`, `prompts/list`): a page of a frozen list from a cursor, and
//! the cursor of the next page.
//!
//! A cursor is the list's fingerprint and an offset, in hex, opaque to clients. Only a cursor
//! this server issued for this list is accepted, byte for byte: the peer's text is compared
//! with the one the server would write, so a forged offset (past the end, not on a page
//! boundary, another list's) is [`McpError::InvalidCursor`], never a panic or a short page.

use crate::error::McpError;

/// One page of `items` from `cursor` (or the start), and the cursor of the next page.
///
/// # Errors
///
/// [`McpError::InvalidCursor`] for a cursor not issued for this list and page size.
pub(crate) fn page<'a, T>(
    items: &'a [T],
    fingerprint: u64,
    cursor: Option<&str>,
    page_size: usize,
) -> Result<(&'a [T], Option<String>), McpError> {
    let start = match cursor {
        None => 0,
        Some(cursor) => offset(items.len(), fingerprint, cursor, page_size)?,
    };
    let end = start.saturating_add(page_size).min(items.len());
    let page = items.get(start..end).unwrap_or_default();
    let next = (end < items.len()).then(|| issue(fingerprint, end));
    Ok((page, next))
}

/// A cursor for `offset` of the list with `fingerprint`.
fn issue(fingerprint: u64, offset: usize) -> String {
    format!("{fingerprint:016x}{offset:08x}")
}

fn offset(len: usize, fingerprint: u64, cursor: &str, page_size: usize) -> Result<usize, McpError> {
    let well_formed = cursor.len() == 24 && cursor.bytes().all(|b| b.is_ascii_hexdigit());
    let (given, offset) = cursor
        .split_at_checked(16)
        .filter(|_| well_formed)
        .ok_or(McpError::InvalidCursor)?;
    let given = u64::from_str_radix(given, 16).map_err(|_| McpError::InvalidCursor)?;
    let offset = usize::from_str_radix(offset, 16).map_err(|_| McpError::InvalidCursor)?;
    let issued = given == fingerprint
        && offset > 0
        && offset < len
        && offset.checked_rem(page_size) == Some(0)
        && cursor == issue(fingerprint, offset);
    if !issued {
        return Err(McpError::InvalidCursor);
    }
    Ok(offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_follow_their_cursors_to_the_end() {
        let items: Vec<u32> = (0..5).collect();
        let (first, next) = page(&items, 7, None, 2).unwrap();
        assert_eq!(first, [0, 1]);
        let next = next.unwrap();
        assert_eq!(next, "000000000000000700000002");
        let (second, next) = page(&items, 7, Some(&next), 2).unwrap();
        assert_eq!(second, [2, 3]);
        let (last, next) = page(&items, 7, next.as_deref(), 2).unwrap();
        assert_eq!((last, next), (&[4][..], None));
    }

    #[test]
    fn a_cursor_not_issued_for_this_list_is_refused() {
        let items: Vec<u32> = (0..5).collect();
        for cursor in [
            "",
            "x",
            "000000000000000800000002",  // another list
            "000000000000000700000003",  // not on a page boundary
            "000000000000000700000006",  // past the end
            "000000000000000700000000",  // the start is no cursor
            "000000000000000700000002 ", // trailing space
            "00000000000000070000000A",  // upper case: not what we write
            "+00000000000000700000002",
        ] {
            assert!(
                matches!(
                    page(&items, 7, Some(cursor), 2),
                    Err(McpError::InvalidCursor)
                ),
                "{cursor:?}"
            );
        }
    }
}
