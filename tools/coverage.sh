#!/usr/bin/env bash
# Line coverage that the committed fuzz inputs reach, per hostile-boundary module, against the
# floors in tools/coverage-floors.txt. On stable, no libFuzzer:
#
#   bash tools/coverage.sh            # build, replay, report, check the floors
#   bash tools/coverage.sh --no-floors  # report only (exit 0 whatever the figures)
#
# It builds the library tests of airlock and airlock-manifest with `-C instrument-coverage`
# into target/coverage (its own directory: the ordinary build is not rebuilt), runs only the
# corpus-replay tests (`corpus_replays_<target>`: fuzz/corpus and fuzz/regressions through the
# targets' entry points), so the figure is what the fuzz inputs reach, not what unit tests
# reach, then merges the profiles with llvm-profdata and reads them with llvm-cov, both from
# rustup's llvm-tools component (added if missing).
#
# A module's lines are the lines llvm-cov counts in it, less its unit tests: everything from
# the first top-level `#[cfg(test)]` on an inline module (`mod tests {`, at the bottom by the
# style) to the end of the file, and files named tests.rs or *_tests.rs. A floor
# line names a file or a directory (ending in /, its files summed) and a percentage; the
# script exits 1 naming every module below its floor, or a module it found no lines for.
set -euo pipefail

cd "$(dirname "$0")/.."
root=$(pwd)
floors_file="$root/tools/coverage-floors.txt"
check_floors=1
[ "${1:-}" = "--no-floors" ] && check_floors=0

rustup component list --installed 2>/dev/null | grep -q '^llvm-tools' \
    || rustup component add llvm-tools
tools_bin="$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin"
profdata="$tools_bin/llvm-profdata"
llvm_cov="$tools_bin/llvm-cov"

out="$root/target/coverage"
rm -rf "$out/profraw"
mkdir -p "$out/profraw"
export CARGO_TARGET_DIR="$out"
export RUSTFLAGS="-C instrument-coverage"
export LLVM_PROFILE_FILE="$out/profraw/%m-%p.profraw"
packages=(-p airlock -p airlock-manifest -p airlock-audit --features airlock/http)

# The test binaries (built once; a warm run only links what changed). Built first on their
# own, so a compile error shows and fails the script; then listed, from cargo's JSON.
cargo test --locked "${packages[@]}" --lib --no-run --quiet
mapfile -t objects < <(
    cargo test --locked "${packages[@]}" --lib --no-run --message-format=json 2>/dev/null \
        | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p'
)
[ "${#objects[@]}" -gt 0 ] || { echo "coverage: no test binary was built" >&2; exit 1; }
for object in "${objects[@]}"; do
    "$object" corpus_replays_ --quiet
done
"$profdata" merge -sparse "$out"/profraw/*.profraw -o "$out/corpus.profdata"

object_args=()
for object in "${objects[@]}"; do object_args+=(-object "$object"); done
"$llvm_cov" export -format=lcov -instr-profile="$out/corpus.profdata" "${object_args[@]}" \
    --ignore-filename-regex='(/\.cargo/|/rustc/|/\.rustup/)' >"$out/corpus.lcov"

# Per source file: lines found and hit, unit tests left out.
awk -v root="$root/" '
    /^SF:/ {
        file = substr($0, 4); rel = file; sub("^" root, "", rel)
        cut = 0
        if (rel ~ /(^|\/)([a-z0-9_]+_)?tests\.rs$/) cut = 1
        else {
            n = 0
            while ((getline line < file) > 0) {
                n++
                if (line ~ /^#\[cfg\(test\)\]/) {
                    at = n
                    if ((getline line < file) > 0) n++
                    if (line ~ /\{[[:space:]]*$/) { cut = at; break }
                }
            }
            close(file)
        }
        next
    }
    /^DA:/ {
        split(substr($0, 4), f, ",")
        if (cut == 0 || f[1] + 0 < cut) {
            found[rel]++
            if (f[2] + 0 > 0) hit[rel]++
        }
        next
    }
    END { for (r in found) printf "%s %d %d\n", r, found[r], hit[r] + 0 }
' "$out/corpus.lcov" | sort >"$out/files.txt"

# The table, module by module as the floors file lists them.
status=0
failed=()
printf '%-50s %7s %8s %7s %6s\n' module lines covered % floor
while read -r module floor; do
    case "$module" in '' | '#'*) continue ;; esac
    read -r lines covered < <(awk -v m="$module" '
        (m ~ /\/$/ ? index($1, m) == 1 : $1 == m) { l += $2; c += $3 }
        END { printf "%d %d\n", l, c }' "$out/files.txt")
    if [ "$lines" -eq 0 ]; then
        printf '%-50s %7s %8s %7s %5s%%  NO LINES FOUND\n' "$module" - - - "$floor"
        failed+=("$module (no lines found)")
        status=1
        continue
    fi
    # Percent to one decimal, in integers: tenths = floor(1000 * covered / lines).
    tenths=$((1000 * covered / lines))
    pct="$((tenths / 10)).$((tenths % 10))"
    mark=""
    if [ "$tenths" -lt "$((floor * 10))" ]; then
        mark="  BELOW FLOOR"
        failed+=("$module ($pct% < $floor%)")
        status=1
    fi
    printf '%-50s %7d %8d %6s%% %5s%%%s\n' "$module" "$lines" "$covered" "$pct" "$floor" "$mark"
done <"$floors_file"

if [ "$status" -ne 0 ]; then
    if [ "$check_floors" -eq 1 ]; then
        printf 'coverage: below its floor (tools/coverage-floors.txt): %s\n' "${failed[@]}" >&2
        echo "coverage: grow the target's corpus" >&2
        echo "coverage:   (fuzz, then cargo fuzz cmin into fuzz/corpus/<target>), or say why in the commit" >&2
        exit 1
    fi
fi
echo "coverage: lcov at target/coverage/corpus.lcov, per-file figures at target/coverage/files.txt"
