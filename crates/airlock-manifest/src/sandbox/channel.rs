//! The control channel between airlock and one of its launchers: a unix stream socket pair,
//! one fixed-size message per call in each direction.
//!
//! A launcher serves many calls of one tool, one at a time (see [`super::resident`]). For each
//! call airlock sends a [`Call`]: the length of the command line and, as `SCM_RIGHTS`, the
//! call's three pipe ends (stdin to read, stdout and stderr to write). The launcher reads the
//! command line from that stdin (`super::spawn::header`; the command gets the rest), starts
//! the program on the three pipes, waits for it, kills and reaps everything else left in its
//! PID namespace, and answers with the call's [`Status`]. Only then does airlock send the next
//! call, so a call never shares the namespace with a process of an earlier one.
//!
//! Both sides trust the channel's bytes no more than they must: airlock reads statuses with a
//! plain `read`, so descriptors sent its way are closed by the kernel unread, and anything but
//! a well-formed status ends the launcher's use; the launcher takes exactly three descriptors
//! and refuses a message of any other shape.
//!
//! (A stream rather than a `SOCK_SEQPACKET` pair: tokio can wait on a unix stream without
//! `unsafe`, and both messages have a fixed size, so nothing is lost.)

use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{BorrowedFd, OwnedFd};

use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags, SocketFlags, SocketType,
};

/// A connected pair: airlock's end first (close-on-exec, non-blocking), the launcher's second
/// (close-on-exec, blocking; it becomes the launcher's stdin, which clears the flag there).
///
/// # Errors
///
/// The socket could not be created (descriptors exhausted).
pub(crate) fn pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let (ours, theirs) = rustix::net::socketpair(
        AddressFamily::UNIX,
        SocketType::STREAM,
        SocketFlags::CLOEXEC,
        None,
    )?;
    rustix::io::ioctl_fionbio(&ours, true)?;
    Ok((ours, theirs))
}

/// One call as the launcher receives it.
pub(crate) struct Call {
    /// Bytes of the command line at the start of `stdin`.
    pub(crate) command_line_bytes: usize,
    /// The command's stdin, read end; it starts with the command line.
    pub(crate) stdin: OwnedFd,
    /// The command's stdout, write end.
    pub(crate) stdout: OwnedFd,
    /// The command's stderr, write end.
    pub(crate) stderr: OwnedFd,
}

/// How a call ended, as the launcher reports it.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub(crate) enum Status {
    /// The program exited with this code.
    Exited(i32),
    /// The program was killed by this signal.
    Signaled(i32),
    /// The launcher could not confine or start the program, which never ran; a fixed line
    /// saying which step failed was written to the call's stderr.
    Failed,
}

/// Sends one call: the command line's length, and the three descriptors.
///
/// # Errors
///
/// As `sendmsg`: `WouldBlock` on a full socket (airlock's end is non-blocking), a broken
/// pipe when the launcher is gone.
pub(crate) fn send_call(
    control: BorrowedFd<'_>,
    command_line_bytes: u32,
    pipes: [BorrowedFd<'_>; 3],
) -> io::Result<()> {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(3))];
    let mut ancillary = SendAncillaryBuffer::new(&mut space);
    if !ancillary.push(SendAncillaryMessage::ScmRights(&pipes)) {
        return Err(io::Error::other("ancillary buffer too small"));
    }
    let bytes = command_line_bytes.to_le_bytes();
    let sent = rustix::net::sendmsg(
        control,
        &[io::IoSlice::new(&bytes)],
        &mut ancillary,
        SendFlags::NOSIGNAL,
    )?;
    if sent == bytes.len() {
        Ok(())
    } else {
        Err(io::Error::from(io::ErrorKind::WriteZero))
    }
}

/// Receives the next call; `Ok(None)` when airlock closed its end (no more calls).
///
/// # Errors
///
/// A message of another shape than [`send_call`]'s, or a failed `recvmsg`.
pub(crate) fn receive_call(control: BorrowedFd<'_>) -> Result<Option<Call>, &'static str> {
    let mut bytes = [0_u8; CALL_BYTES];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(3))];
    let mut ancillary = RecvAncillaryBuffer::new(&mut space);
    let received = loop {
        match rustix::net::recvmsg(
            control,
            &mut [io::IoSliceMut::new(&mut bytes)],
            &mut ancillary,
            RecvFlags::CMSG_CLOEXEC,
        ) {
            Ok(received) => break received,
            Err(errno) if errno == rustix::io::Errno::INTR => {}
            Err(_) => return Err("receiving a call"),
        }
    };
    let mut fds: Vec<OwnedFd> = Vec::with_capacity(3);
    for message in ancillary.drain() {
        if let RecvAncillaryMessage::ScmRights(received) = message {
            fds.extend(received);
        }
    }
    if received.bytes == 0 && fds.is_empty() {
        return Ok(None);
    }
    let truncated = received.flags.contains(rustix::net::ReturnFlags::CTRUNC)
        || received.flags.contains(rustix::net::ReturnFlags::TRUNC);
    if truncated || received.bytes != CALL_BYTES {
        return Err("a call message of the wrong shape");
    }
    let (length, _) = bytes
        .split_first_chunk::<CALL_BYTES>()
        .ok_or("a call message of the wrong shape")?;
    let command_line_bytes =
        usize::try_from(u32::from_le_bytes(*length)).map_err(|_| "a command line too long")?;
    let mut fds = fds.into_iter();
    match (fds.next(), fds.next(), fds.next(), fds.next()) {
        (Some(stdin), Some(stdout), Some(stderr), None) => Ok(Some(Call {
            command_line_bytes,
            stdin,
            stdout,
            stderr,
        })),
        _ => Err("a call without exactly three descriptors"),
    }
}

/// Sends a call's status (the launcher's side; blocking); `last` says the launcher serves no
/// more calls after this one.
///
/// # Errors
///
/// The socket is gone (airlock stopped waiting).
pub(crate) fn send_status(
    control: BorrowedFd<'_>,
    status: Status,
    later_code_removed: u32,
    last: bool,
) -> io::Result<()> {
    let (kind, value) = match status {
        Status::Exited(code) => (EXITED, code),
        Status::Signaled(signal) => (SIGNALED, signal),
        Status::Failed => (FAILED, 0),
    };
    let kind = if last { kind | LAST } else { kind };
    let mut message = [0_u8; STATUS_BYTES];
    for (field, bytes) in message.chunks_exact_mut(4).zip([
        kind.to_le_bytes(),
        value.to_le_bytes(),
        later_code_removed.to_le_bytes(),
    ]) {
        field.copy_from_slice(&bytes);
    }
    let mut rest = message.as_slice();
    while !rest.is_empty() {
        match rustix::net::send(control, rest, SendFlags::NOSIGNAL) {
            Ok(0) => return Err(io::Error::from(io::ErrorKind::WriteZero)),
            Ok(sent) => rest = rest.get(sent..).unwrap_or_default(),
            Err(errno) if errno == rustix::io::Errno::INTR => {}
            Err(errno) => return Err(errno.into()),
        }
    }
    Ok(())
}

/// Sends the proxy's listening socket (the launcher's side, once, before it serves a call):
/// a status-sized message of kind `NETWORK` with the socket as `SCM_RIGHTS`.
///
/// # Errors
///
/// The socket is gone (airlock stopped waiting).
pub(crate) fn send_network(control: BorrowedFd<'_>, listener: BorrowedFd<'_>) -> io::Result<()> {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut ancillary = SendAncillaryBuffer::new(&mut space);
    let fds = [listener];
    if !ancillary.push(SendAncillaryMessage::ScmRights(&fds)) {
        return Err(io::Error::other("ancillary buffer too small"));
    }
    let mut message = [0_u8; STATUS_BYTES];
    if let Some(kind) = message.first_chunk_mut::<4>() {
        *kind = NETWORK.to_le_bytes();
    }
    let sent = rustix::net::sendmsg(
        control,
        &[io::IoSlice::new(&message)],
        &mut ancillary,
        SendFlags::NOSIGNAL,
    )?;
    if sent == message.len() {
        Ok(())
    } else {
        Err(io::Error::from(io::ErrorKind::WriteZero))
    }
}

/// The first message of a networked tool's launcher, as airlock receives it.
#[derive(Debug)]
pub(crate) enum First {
    /// The proxy's listening socket in the launcher's namespace.
    Network(OwnedFd),
    /// A status: the launcher failed while confining itself, and reported on the call.
    Status(Report),
}

/// Receives a networked launcher's first message (airlock's side, non-blocking: `WouldBlock`
/// until it has arrived). Sent in one `sendmsg` of [`STATUS_BYTES`], it arrives whole.
///
/// # Errors
///
/// `WouldBlock`; `UnexpectedEof` when the launcher is gone; `InvalidData` for any other shape.
pub(crate) fn receive_first(control: BorrowedFd<'_>) -> io::Result<First> {
    let mut bytes = [0_u8; STATUS_BYTES];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut ancillary = RecvAncillaryBuffer::new(&mut space);
    let received = rustix::net::recvmsg(
        control,
        &mut [io::IoSliceMut::new(&mut bytes)],
        &mut ancillary,
        RecvFlags::CMSG_CLOEXEC,
    )?;
    let mut fds: Vec<OwnedFd> = Vec::with_capacity(1);
    for message in ancillary.drain() {
        if let RecvAncillaryMessage::ScmRights(received) = message {
            fds.extend(received);
        }
    }
    if received.bytes == 0 {
        return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
    }
    let invalid = || io::Error::from(io::ErrorKind::InvalidData);
    if received.bytes != STATUS_BYTES || received.flags.contains(rustix::net::ReturnFlags::CTRUNC) {
        return Err(invalid());
    }
    let kind = bytes
        .first_chunk::<4>()
        .map(|kind| u32::from_le_bytes(*kind));
    let mut fds = fds.into_iter();
    match (kind, fds.next(), fds.next()) {
        (Some(NETWORK), Some(listener), None) => Ok(First::Network(listener)),
        (Some(_), None, None) => decode_status(bytes).map(First::Status),
        _ => Err(invalid()),
    }
}

/// A status as it arrived, and whether it is the launcher's last.
#[derive(Debug)]
pub(crate) struct Report {
    /// How the call ended.
    pub(crate) status: Status,
    /// Whether the launcher ends after this call (it is not to be given another).
    pub(crate) last: bool,
    /// Paths the call created that make other programs run code later, which the launcher
    /// removed (`super::later_code`).
    pub(crate) later_code_removed: u32,
}

/// A status as it arrived (airlock's side, which reads exactly [`STATUS_BYTES`]).
///
/// # Errors
///
/// `InvalidData` for bytes that are not a status.
pub(crate) fn decode_status(message: [u8; STATUS_BYTES]) -> io::Result<Report> {
    let invalid = || io::Error::from(io::ErrorKind::InvalidData);
    let mut fields = message
        .chunks_exact(4)
        .map(|field| <[u8; 4]>::try_from(field).map_err(|_| invalid()));
    let mut next = || fields.next().ok_or_else(invalid)?;
    let kind = u32::from_le_bytes(next()?);
    let value = i32::from_le_bytes(next()?);
    let later_code_removed = u32::from_le_bytes(next()?);
    let status = match kind & !LAST {
        EXITED => Status::Exited(value),
        SIGNALED => Status::Signaled(value),
        FAILED => Status::Failed,
        _ => return Err(invalid()),
    };
    Ok(Report {
        status,
        last: kind & LAST != 0,
        later_code_removed,
    })
}

/// Bytes of a call message: the command line's length.
const CALL_BYTES: usize = 4;
/// Bytes of a status message: its kind, its value, the later-code paths removed.
pub(crate) const STATUS_BYTES: usize = 12;

const EXITED: u32 = 1;
const SIGNALED: u32 = 2;
const FAILED: u32 = 3;
/// The kind of a networked launcher's first message: the proxy's socket (`send_network`).
const NETWORK: u32 = 4;
/// Flag on a status's kind: the launcher's last call.
const LAST: u32 = 1 << 16;

#[cfg(test)]
mod tests {
    use std::io::{Read as _, Write as _};
    use std::os::fd::AsFd as _;

    use super::*;

    #[test]
    fn a_call_carries_its_length_and_three_working_pipes() {
        let (ours, theirs) = pair().unwrap();
        let (stdin_read, mut stdin_write) = std::io::pipe().unwrap();
        let (mut stdout_read, stdout_write) = std::io::pipe().unwrap();
        let (mut stderr_read, stderr_write) = std::io::pipe().unwrap();
        send_call(
            ours.as_fd(),
            17,
            [
                stdin_read.as_fd(),
                stdout_write.as_fd(),
                stderr_write.as_fd(),
            ],
        )
        .unwrap();
        drop((stdin_read, stdout_write, stderr_write));

        let call = receive_call(theirs.as_fd()).unwrap().unwrap();
        assert_eq!(call.command_line_bytes, 17);
        stdin_write.write_all(b"in").unwrap();
        drop(stdin_write);
        let mut input = String::new();
        std::fs::File::from(call.stdin)
            .read_to_string(&mut input)
            .unwrap();
        assert_eq!(input, "in");
        std::fs::File::from(call.stdout).write_all(b"out").unwrap();
        std::fs::File::from(call.stderr).write_all(b"err").unwrap();
        let mut output = String::new();
        stdout_read.read_to_string(&mut output).unwrap();
        assert_eq!(output, "out");
        output.clear();
        stderr_read.read_to_string(&mut output).unwrap();
        assert_eq!(output, "err");
    }

    /// Reads one status as airlock does: exactly its bytes, `None` at the end.
    fn read_status(ours: &OwnedFd) -> Option<io::Result<Report>> {
        let mut stream = std::os::unix::net::UnixStream::from(ours.try_clone().unwrap());
        stream.set_nonblocking(false).unwrap();
        let mut message = [0_u8; STATUS_BYTES];
        match stream.read_exact(&mut message) {
            Ok(()) => Some(decode_status(message)),
            Err(error) if error.kind() == io::ErrorKind::UnexpectedEof => None,
            Err(error) => Some(Err(error)),
        }
    }

    #[test]
    fn each_status_arrives_as_sent() {
        let (ours, theirs) = pair().unwrap();
        for status in [
            Status::Exited(0),
            Status::Exited(125),
            Status::Exited(-1),
            Status::Signaled(24),
            Status::Failed,
        ] {
            for last in [false, true] {
                send_status(theirs.as_fd(), status, 0, last).unwrap();
                let report = read_status(&ours).unwrap().unwrap();
                assert_eq!((report.status, report.last), (status, last));
            }
        }
        drop(theirs);
        assert!(read_status(&ours).is_none());
    }

    #[test]
    fn a_closed_control_socket_means_no_more_calls() {
        let (ours, theirs) = pair().unwrap();
        drop(ours);
        assert!(matches!(receive_call(theirs.as_fd()), Ok(None)));
    }

    #[test]
    fn a_call_without_three_descriptors_is_refused() {
        let (ours, theirs) = pair().unwrap();
        // Bytes without descriptors.
        rustix::net::send(&ours, &[1, 0, 0, 0], SendFlags::empty()).unwrap();
        assert!(receive_call(theirs.as_fd()).is_err());
        // Two descriptors instead of three.
        let (a, b) = std::io::pipe().unwrap();
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
        let mut ancillary = SendAncillaryBuffer::new(&mut space);
        let fds = [a.as_fd(), b.as_fd()];
        assert!(ancillary.push(SendAncillaryMessage::ScmRights(&fds)));
        rustix::net::sendmsg(
            &ours,
            &[io::IoSlice::new(&[1, 0, 0, 0])],
            &mut ancillary,
            SendFlags::empty(),
        )
        .unwrap();
        assert!(receive_call(theirs.as_fd()).is_err());
    }

    #[test]
    fn bytes_that_are_not_a_status_are_refused() {
        for message in [[0_u8; STATUS_BYTES], [9, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]] {
            assert_eq!(
                decode_status(message).unwrap_err().kind(),
                io::ErrorKind::InvalidData
            );
        }
    }
}
