#!/usr/bin/env bash
# run-hazards.sh - build p2p-verify and run what BENCHMARK.md records of its
# hazard tests, on a machine with two GPUs or more: the default run (timed),
# the same with --json, every hazard self-test (each must end in CORRUPTION,
# exit 21), the integrity self-tests, the opt-in managed-memory test, and bad
# input (one GPU: 24; a GPU listed twice: 22; managed-corrupt without
# --managed: 2).
#
# Usage (from the repository root):
#   verify/bench/run-hazards.sh OUT_DIR
# NCCL: $NCCL_HOME, else the python package nvidia.nccl where it exists
# (else the NCCL section says SKIP).  ARCH (default 90) is the SM target.
# OUT_DIR gets summary.txt, default.txt, default.json (with -v: the log in
# json-verbose.log), selftests.txt, managed.txt and badinput.txt.
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
    printf 'nvcc: %s\n' "$(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*, V[0-9.]*')"
    printf 'NCCL_HOME: %s\n' "${NCCL_HOME:-unset}"
    nvidia-smi topo -m
} | tee -a "${summary}"

build_tool

note "default run (no options), timed"
t0=$(now)
rc=0
"${tool}" >"${out}/default.txt" 2>&1 || rc=$?
check "default run" 0 "${rc}" "$(secs "${t0}" "$(now)")"
sed -n '/== Hazard tests ==/,/== Bandwidth/p' "${out}/default.txt"
sed -n '/== VERDICT/,$p' "${out}/default.txt"

note "--json -v (the sections' times from the log)"
t0=$(now)
rc=0
"${tool}" --json -v >"${out}/default.json" 2>"${out}/json-verbose.log" || rc=$?
check "--json -v" 0 "${rc}" "$(secs "${t0}" "$(now)")"
python3 - "${out}/default.json" "${out}/json-verbose.log" <<'PY' | tee -a "${summary}"
import json, re, sys, collections
d = json.load(open(sys.argv[1]))
# [p2p-verify   1.23s] lines: where each section starts
starts = {}
for line in open(sys.argv[2]):
    m = re.match(r"\[p2p-verify +([0-9.]+)s\] (.*)", line)
    if not m:
        continue
    t, msg = float(m.group(1)), m.group(2)
    for key, pre in (("integrity", "integrity GPU"), ("hazards", "hazards: "), ("perf", "perf "),
                     ("nccl", "NCCL phase")):
        if msg.startswith(pre) and key not in starts:
            starts[key] = t
order = sorted(starts.items(), key=lambda kv: kv[1]) + [("end", d["elapsed_s"])]
print("sections (s):", ", ".join("%s %.2f" % (order[k][0], order[k + 1][1] - order[k][1])
                                 for k in range(len(order) - 1)),
      "; before the first: %.2f" % order[0][1])
h = d["hazards"]
print("hazards.counts:", h["counts"])
per = collections.defaultdict(list)
for x in h["results"]:
    per[x["test"]].append(x)
for t in h["tests"]:
    xs = per[t]
    st = collections.Counter(x["status"] for x in xs)
    print("%-13s %-40s total %.3f s, max %.3f s per pair" % (t, dict(st), sum(x["seconds"] for x in xs),
                                                            max(x["seconds"] for x in xs) if xs else 0))
print("verdict:", d["verdict"]["exit_code"], d["verdict"]["status"], "elapsed_s", d["elapsed_s"])
PY

note "self-tests"
: >"${out}/selftests.txt"
for mode in comp-corrupt lost-update flag-before-data stale "managed-corrupt --managed" zero-chunk drop-chunk flip-bit; do
    pairs=()
    [[ ${mode} == *chunk || ${mode} == flip-bit ]] && pairs=(--pairs "0-1,1-0")
    t0=$(now)
    rc=0
    # shellcheck disable=SC2086 # mode may carry --managed
    "${tool}" --self-test ${mode} "${pairs[@]}" >>"${out}/selftests.txt" 2>&1 || rc=$?
    check "--self-test ${mode}" 21 "${rc}" "$(secs "${t0}" "$(now)")"
done
grep -E 'self-test|SELF-TEST|VERDICT|HAZARD' "${out}/selftests.txt" | sort | uniq -c | sort -rn | head -n 40

note "--managed (opt-in)"
t0=$(now)
rc=0
"${tool}" --managed --no-perf --no-nccl --no-integrity -v >"${out}/managed.txt" 2>&1 || rc=$?
check "--managed --no-perf --no-nccl --no-integrity" 0 "${rc}" "$(secs "${t0}" "$(now)")"
grep -E 'managed|VERDICT' "${out}/managed.txt" | head -n 20

note "--pairs 0-1: the hazard tests of that pair only"
t0=$(now)
rc=0
"${tool}" --pairs 0-1 --no-perf --no-nccl --no-integrity --json 2>/dev/null >"${out}/pairs.json" || rc=$?
check "--pairs 0-1 --no-perf --no-nccl --no-integrity --json" 0 "${rc}" "$(secs "${t0}" "$(now)")"
python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))["hazards"]["results"]; print("--pairs 0-1: %d hazard results, pairs %s" % (len(r), sorted({(x["src"], x["dst"]) for x in r})))' \
    "${out}/pairs.json" | tee -a "${summary}"
rm -f "${out}/pairs.json"

note "bad input"
: >"${out}/badinput.txt"
t0=$(now)
rc=0
"${tool}" --self-test managed-corrupt >>"${out}/badinput.txt" 2>&1 || rc=$?
check "--self-test managed-corrupt without --managed" 2 "${rc}" "$(secs "${t0}" "$(now)")"
t0=$(now)
rc=0
CUDA_VISIBLE_DEVICES=0 "${tool}" --no-nccl >>"${out}/badinput.txt" 2>&1 || rc=$?
check "CUDA_VISIBLE_DEVICES=0 (one GPU)" 24 "${rc}" "$(secs "${t0}" "$(now)")"
t0=$(now)
rc=0
CUDA_VISIBLE_DEVICES=0,0 "${tool}" --no-nccl >>"${out}/badinput.txt" 2>&1 || rc=$?
check "CUDA_VISIBLE_DEVICES=0,0 (a GPU twice)" 22 "${rc}" "$(secs "${t0}" "$(now)")"
grep -E 'VERDICT|twice|visible' "${out}/badinput.txt"

note "summary"
cat "${summary}"
