#!/usr/bin/env bash
# Supply-chain evidence for reviewers (SECURITY.md, "Supply chain"):
#
#   bash tools/sbom.sh            # CycloneDX SBOMs of the workspace, from Cargo.lock
#   bash tools/sbom.sh auditable  # the release `airlock` binary with its dependency list embedded
#   bash tools/sbom.sh auditable debug   # the same on a debug build (what .ci/run checks)
#
# The SBOMs (CycloneDX 1.5 JSON, one per package of the workspace, `airlock-cli` being the
# program) go to target/sbom/. `auditable` builds the release binary with cargo-auditable:
# the locked dependency list rides in the binary's `.dep-v0` section, readable later by
# `cargo audit bin`, syft or trivy, so a deployed binary can be checked against advisories
# without its source. Installs cargo-cyclonedx and cargo-auditable (pinned) if missing.
set -euo pipefail

cd "$(dirname "$0")/.."
cyclonedx_version="0.5.9"
auditable_version="0.7.7"

need() {
    local tool="$1" version="$2"
    if ! cargo install --list | grep -q "^$tool v$version:"; then
        cargo install --locked "$tool@$version"
    fi
}

sbom() {
    need cargo-cyclonedx "$cyclonedx_version"
    rm -rf target/sbom && mkdir -p target/sbom
    cargo cyclonedx --format json --spec-version 1.5 --all-features \
        --target x86_64-unknown-linux-gnu --override-filename airlock.cdx
    # cargo-cyclonedx writes each package's BOM beside its Cargo.toml; gather them.
    mv airlock.cdx.json target/sbom/airlock-cli.cdx.json      # the top package: the program
    local dir
    for dir in crates/*; do
        mv "$dir/airlock.cdx.json" "target/sbom/$(basename "$dir").cdx.json"
    done
    python3 - target/sbom <<'PY'
import json, pathlib, sys
for path in sorted(pathlib.Path(sys.argv[1]).glob("*.cdx.json")):
    bom = json.loads(path.read_text())
    assert bom["bomFormat"] == "CycloneDX", path
    print(f"{path}: {len(bom.get('components', []))} components")
PY
}

auditable() {
    local profile="${1:-release}" flags=()
    [ "$profile" = "release" ] && flags=(--release)
    need cargo-auditable "$auditable_version"
    cargo auditable build --locked "${flags[@]}" --bin airlock
    if ! objdump -h "target/$profile/airlock" | grep -q '\.dep-v0'; then
        echo "target/$profile/airlock carries no .dep-v0 section" >&2
        exit 1
    fi
    echo "target/$profile/airlock carries its dependency list (.dep-v0)"
}

"${1:-sbom}" "${@:2}"
