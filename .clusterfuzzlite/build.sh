#!/usr/bin/env bash
# Builds every fuzz target into $OUT with its seed corpus and dictionary: the build script of
# ClusterFuzzLite and OSS-Fuzz (their image sets $SRC, $OUT and the nightly toolchain), and the
# build of `.ci/run`'s fuzz step, which runs the targets from $OUT. Locally:
#
#   OUT=/tmp/fuzz-out bash .clusterfuzzlite/build.sh
#
# Optional: CARGO_FUZZ_TOOLCHAIN=+nightly (the runner image's cargo is nightly already),
# CARGO_FUZZ_FLAGS="--sanitizer none" (no sanitizer, on stable).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
out="${OUT:?set OUT to the directory the targets go to}"
toolchain="${CARGO_FUZZ_TOOLCHAIN:-}"
read -r -a flags <<<"${CARGO_FUZZ_FLAGS:-}"
mkdir -p "$out"

cd "$root/fuzz"
# Release with debug assertions and overflow checks: airlock's release profile keeps
# overflow checks too, and a fuzzer should see what an arithmetic bug does.
cargo $toolchain fuzz build -O --debug-assertions "${flags[@]}"
built="target/x86_64-unknown-linux-gnu/release"
for target in $(cargo $toolchain fuzz list); do
    cp "$built/$target" "$out/$target"
    # The committed seeds, as the runner wants them (a zip of files, no directories).
    rm -f "$out/${target}_seed_corpus.zip"
    if [ -d "corpus/$target" ]; then
        (cd "corpus/$target" && zip -q -j "$out/${target}_seed_corpus.zip" ./*)
    fi
    # Past findings too, so continuous fuzzing starts from every input a fix was made for.
    if [ -d "regressions/$target" ]; then
        find "regressions/$target" -type f ! -name README.md -print0 |
            xargs -0 -r zip -q -j "$out/${target}_seed_corpus.zip"
    fi
    case "$target" in
        envelope|engine|answers|rounds|arguments|argv) cp dicts/mcp.dict "$out/$target.dict" ;;
        http) cp dicts/http.dict "$out/$target.dict" ;;
        manifest) cp dicts/toml.dict "$out/$target.dict" ;;
        policy) cat dicts/toml.dict dicts/policy.dict >"$out/$target.dict" ;;
        judge) cat dicts/mcp.dict dicts/judge.dict >"$out/$target.dict" ;;
    esac
done
echo "built $(cargo $toolchain fuzz list | wc -l) targets into $out"
