# Runs `airlock serve … --audit-log` on a tiny tmpfs that fills up, for tests/it/redteam.rs.
# Started as `unshare -Urm sh redteam-full-disk.sh MOUNT OUT AIRLOCK ARGS…`: MOUNT gets a
# 16 KiB tmpfs with 8 KiB of it taken by a filler file; once the test creates OUT/go, the
# filler is removed (the disk has room again) and OUT/freed says so; when airlock exits, its
# audit log is copied to OUT/audit.jsonl.
mount_dir=$1
out=$2
shift 2
mount -t tmpfs -o size=16k tmpfs "$mount_dir" || exit 97
head -c 8192 /dev/zero > "$mount_dir/filler" || exit 98
(
    tries=0
    while [ ! -e "$out/go" ] && [ "$tries" -lt 1200 ]; do
        sleep 0.05
        tries=$((tries + 1))
    done
    rm -f "$mount_dir/filler"
    touch "$out/freed"
) </dev/null >/dev/null 2>&1 &
"$@" --audit-log "$mount_dir/audit.jsonl"
status=$?
cp "$mount_dir/audit.jsonl" "$out/audit.jsonl"
exit "$status"
