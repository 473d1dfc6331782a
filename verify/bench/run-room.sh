#!/usr/bin/env bash
# run-room.sh - build p2p-verify and run what BENCHMARK.md records of
# --resident and --peer-cap on a machine with two GPUs or more: the full run
# with most of each GPU's memory held (timed), the same with --json, the
# legacy peer-access cap alone, its self-test (cap-corrupt: 21), and bad
# input (--resident asking more than a GPU has free less 2 GiB: 2; an
# unparsable value: 2; cap-corrupt without --peer-cap: 2).
#
# Usage (from the repository root):
#   verify/bench/run-room.sh OUT_DIR
# NCCL: $NCCL_HOME, else the python package nvidia.nccl where it exists
# (else the NCCL section says SKIP).  ARCH (default 90) is the SM target.
# OUT_DIR gets summary.txt, resident.txt, resident.json, peercap.txt,
# selftest.txt and badinput.txt.
set -uo pipefail

out="${1:?usage: $0 OUT_DIR}"
mkdir -p "${out}"
out="$(cd "${out}" && pwd)"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
tool="${repo}/verify/p2p-verify"

# shellcheck source=verify/bench/bench-lib.sh
source "${repo}/verify/bench/bench-lib.sh"

note "machine"
{
    date -u +'date: %Y-%m-%dT%H:%M:%SZ'
    nvidia-smi -L
    printf 'driver: %s\n' "$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n 1)"
    nvidia-smi --query-gpu=index,memory.total,memory.free --format=csv
    nvidia-smi -q -d MEMORY | grep -A3 'BAR1 Memory Usage' | grep Total | sort | uniq -c
} | tee -a "${summary}"

build_tool

note "--resident 90% --peer-cap (everything else as by default), timed"
t0=$(now)
rc=0
"${tool}" --resident 90% --peer-cap >"${out}/resident.txt" 2>&1 || rc=$?
check "--resident 90% --peer-cap" 0 "${rc}" "$(secs "${t0}" "$(now)")"
sed -n '/== Memory held/,$p' "${out}/resident.txt" | tee -a "${summary}"

note "--json --resident 90% --peer-cap --quick"
t0=$(now)
rc=0
"${tool}" --json --resident 90% --peer-cap --quick >"${out}/resident.json" 2>/dev/null || rc=$?
check "--json --resident 90% --peer-cap --quick" 0 "${rc}" "$(secs "${t0}" "$(now)")"
python3 - "${out}/resident.json" <<'PY' | tee -a "${summary}"
import json, sys
d = json.load(open(sys.argv[1]))
r = d["resident"]
print("resident:", r["request"], "ok" if r["ok"] else "NOT OK", r["error"] or "")
for g in r["gpus"]:
    print("  GPU%d held %.2f GiB of %.2f free, at least BAR1: %s" % (g["gpu"], g["held_bytes"] / 2**30,
          g["free_before_bytes"] / 2**30, g["held_at_least_bar1"]))
for c in d["peer_cap"]:
    print("peer_cap GPU%d by %s: %s, %.2f of %.2f GiB, stopped by %s, recovered %s, %.2f s" % (
        c["owner"], c["peers"], c["status"], c["mapped_bytes"] / 2**30, c["limit_bytes"] / 2**30,
        c["stopped_by"], c["recovered"], c["seconds"]))
print("verdict:", d["verdict"]["exit_code"], d["verdict"]["status"], "elapsed_s", d["elapsed_s"])
PY

note "--peer-cap alone"
t0=$(now)
rc=0
"${tool}" --peer-cap --no-integrity --no-hazards --no-perf --no-nccl -v >"${out}/peercap.txt" 2>&1 || rc=$?
check "--peer-cap alone" 0 "${rc}" "$(secs "${t0}" "$(now)")"

note "--self-test cap-corrupt --peer-cap (must be caught: exit 21)"
t0=$(now)
rc=0
"${tool}" --self-test cap-corrupt --peer-cap >"${out}/selftest.txt" 2>&1 || rc=$?
check "--self-test cap-corrupt --peer-cap" 21 "${rc}" "$(secs "${t0}" "$(now)")"
sed -n '/== VERDICT/,$p' "${out}/selftest.txt" | tee -a "${summary}"

note "bad input"
: >"${out}/badinput.txt"
for args in "--resident 99%" "--resident 5T" "--resident 200G" "--resident 1K" "--self-test cap-corrupt"; do
    t0=$(now)
    rc=0
    # shellcheck disable=SC2086 # args is a list of words
    "${tool}" ${args} --no-nccl >>"${out}/badinput.txt" 2>&1 || rc=$?
    check "${args}" 2 "${rc}" "$(secs "${t0}" "$(now)")"
done
cat "${out}/badinput.txt"
