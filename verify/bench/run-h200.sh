#!/usr/bin/env bash
# run-h200.sh - build p2p-verify plus NVIDIA's p2pBandwidthLatencyTest and
# nccl-tests' all_reduce_perf from a carry directory, run them all on the same
# machine, and print the comparison table that verify/BENCHMARK.md records.
#
# Usage (from the repository root, on a machine with >= 2 GPUs):
#   verify/bench/run-h200.sh CARRY_DIR OUT_DIR
#
# CARRY_DIR holds unmodified copies of NVIDIA's sources (never committed here;
# BENCHMARK.md says how to fetch them):
#   CARRY_DIR/cuda-samples/Common/{helper_cuda.h,helper_string.h,helper_timer.h,exception.h}
#   CARRY_DIR/cuda-samples/p2pBandwidthLatencyTest/p2pBandwidthLatencyTest.cu
#   CARRY_DIR/nccl-tests/{Makefile,src,os,verifiable}
# NCCL: $NCCL_DIR (include/ and lib/libnccl.so.2), default: the python
# package nvidia.nccl.  Results land in OUT_DIR (8 files at most).
set -euo pipefail

carry="${1:?usage: $0 CARRY_DIR OUT_DIR}"
out="${2:?usage: $0 CARRY_DIR OUT_DIR}"
carry="$(cd "${carry}" && pwd)"
mkdir -p "${out}"
out="$(cd "${out}" && pwd)"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

# NVLink multicast must stay off on shared machines.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

nvcc_bin="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
cuda_home="$(dirname "$(dirname "${nvcc_bin}")")"
nccl_dir="${NCCL_DIR:-$(python3 -c 'import nvidia.nccl, os; print(os.path.realpath(nvidia.nccl.__path__[0]))')}"
arch="${ARCH:-90}"
work="$(mktemp -d)"
export LD_LIBRARY_PATH="${nccl_dir}/lib:${cuda_home}/lib64:${LD_LIBRARY_PATH:-}"

note() { printf '\n##### %s (%s)\n' "$*" "$(date -u +%H:%M:%S)"; }

note "machine"
{
    date -u +'date: %Y-%m-%dT%H:%M:%SZ'
    nvidia-smi -L
    printf 'driver: %s\n' "$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n 1)"
    printf 'nvcc: %s\n' "$("${nvcc_bin}" --version | grep -o 'release [0-9.]*, V[0-9.]*')"
    printf 'nccl: %s\n' "$(find "${nccl_dir}/lib" -maxdepth 1 -name 'libnccl.so*' -printf '%f ')"
} | tee "${work}/machine.txt"
nvidia-smi topo -m

note "build nccl-tests all_reduce_perf (background, CPU only)"
ncclhome="${work}/ncclhome"
mkdir -p "${ncclhome}/lib" "${work}/nccl-tests-build"
ln -s "${nccl_dir}/include" "${ncclhome}/include"
ln -s "${nccl_dir}/lib/libnccl.so.2" "${ncclhome}/lib/libnccl.so"
ln -s "${nccl_dir}/lib/libnccl.so.2" "${ncclhome}/lib/libnccl.so.2"
cp -r "${carry}/nccl-tests" "${work}/nccl-tests"
(make -C "${work}/nccl-tests/src" -j8 MPI=0 NCCL_HOME="${ncclhome}" CUDA_HOME="${cuda_home}" \
    NVCC_GENCODE="-gencode=arch=compute_${arch},code=sm_${arch}" BUILDDIR="${work}/nccl-tests-build" \
    "${work}/nccl-tests-build/all_reduce_perf" >"${work}/nccl-tests-build.log" 2>&1) &
nccl_build_pid=$!

note "build p2p-verify"
make -C "${repo}/verify" NVCC="${nvcc_bin}" ARCHS="${arch}" >"${work}/verify-build.log" 2>&1 ||
    { cat "${work}/verify-build.log"; exit 1; }
tool="${repo}/verify/p2p-verify"

note "build p2pBandwidthLatencyTest"
"${nvcc_bin}" -O2 -std=c++17 -gencode "arch=compute_${arch},code=sm_${arch}" -I"${carry}/cuda-samples/Common" \
    "${carry}/cuda-samples/p2pBandwidthLatencyTest/p2pBandwidthLatencyTest.cu" -o "${work}/p2pBandwidthLatencyTest"

note "smoke: p2p-verify --quick --no-nccl --no-perf"
smoke=0
"${tool}" --quick --no-nccl --no-perf -v || smoke=$?
printf 'smoke exit %d\n' "${smoke}"

note "self-tests (each must end in CORRUPTION, exit 21)"
: >"${out}/selftest.txt"
for mode in zero-chunk drop-chunk flip-bit; do
    rc=0
    "${tool}" --self-test "${mode}" --pairs 0-1,1-0 >>"${out}/selftest.txt" 2>&1 || rc=$?
    printf 'SELFTEST %s exit %d\n' "${mode}" "${rc}" | tee -a "${out}/selftest.txt"
done

note "NVIDIA p2pBandwidthLatencyTest"
"${work}/p2pBandwidthLatencyTest" | tee "${out}/nvidia-p2pBandwidthLatencyTest.txt"

note "wait for the nccl-tests build"
wait "${nccl_build_pid}" || { tail -n 30 "${work}/nccl-tests-build.log"; exit 1; }

note "p2p-verify default run (no options; NCCL found through NCCL_HOME), timed"
t0="$(date +%s.%N)"
rc_default=0
NCCL_HOME="${nccl_dir}" "${tool}" >"${out}/ours-default.txt" 2>&1 || rc_default=$?
t1="$(date +%s.%N)"
cat "${out}/ours-default.txt"
wall="$(awk -v a="${t0}" -v b="${t1}" 'BEGIN { printf "%.2f", b - a }')"
printf 'DEFAULT exit %d wall %s s\n' "${rc_default}" "${wall}" | tee "${work}/default-rc.txt"

note "p2p-verify --json (human report on stderr), NCCL logs kept"
mkdir -p "${work}/tmp"
rc_json=0
TMPDIR="${work}/tmp" P2P_VERIFY_KEEP_TMP=1 NCCL_HOME="${nccl_dir}" "${tool}" --json \
    >"${out}/ours.json" 2>"${work}/ours-json-human.txt" || rc_json=$?
printf 'JSON exit %d\n' "${rc_json}"
for f in "${work}"/tmp/p2p-verify.*/nccl-*.log; do
    [[ -e "${f}" ]] || continue
    printf '# %s\n' "$(basename "${f}")"
    grep -E 'NCCL INFO (Channel [0-9]+(/[0-9]+)? : .* via |NCCL version|cudaDev)' "${f}" || true
done >"${out}/nccl-info.log"

note "nccl-tests all_reduce_perf -b 8M -e 512M -f 4 -g 2"
{
    printf '### P2P allowed\n'
    "${work}/nccl-tests-build/all_reduce_perf" -b 8M -e 512M -f 4 -g 2
    printf '### NCCL_P2P_DISABLE=1\n'
    NCCL_P2P_DISABLE=1 "${work}/nccl-tests-build/all_reduce_perf" -b 8M -e 512M -f 4 -g 2
} 2>&1 | tee "${out}/nccl-tests.txt"

note "comparison"
python3 - "${out}" "${work}/default-rc.txt" "${work}/machine.txt" <<'PY' | tee "${out}/compare.txt"
import json, re, sys
out, rcfile, machine = sys.argv[1:4]
ours = json.load(open(f"{out}/ours.json"))
nv = open(f"{out}/nvidia-p2pBandwidthLatencyTest.txt").read().splitlines()
nt = open(f"{out}/nccl-tests.txt").read()

def nv_matrix(title):
    for k, line in enumerate(nv):
        if line.strip().startswith(title):
            rows = []
            for l2 in nv[k + 2:]:
                p = l2.split()
                if not p or not re.fullmatch(r"\d+", p[0]):
                    break
                rows.append([float(x) for x in p[1:]])
            return rows
    raise SystemExit(f"title not found in p2pBandwidthLatencyTest output: {title}")

def nt_busbw(section):
    part = nt.split("### ")[1 if section == "p2p" else 2]
    res = {}
    for line in part.splitlines():
        p = line.split()
        if len(p) >= 13 and p[0].isdigit() and not line.startswith("#"):
            res[int(p[0])] = float(p[7])  # out-of-place busbw
    return res

perf = ours["performance"]
ids = ours["matrix_gpus"]
rows = []
def add(metric, o, n, kind):
    if kind == "bw":
        ratio = o / n
        ok = "PASS" if ratio >= 0.95 else "FAIL"
    elif kind == "lat":
        ratio = o / n
        ok = "PASS" if abs(ratio - 1) <= 0.15 else "FAIL"
    else:
        ratio = o / n if n else float("nan")
        ok = "info"
    rows.append((metric, o, n, ratio, ok))

pairs = [(a, b) for a in range(len(ids)) for b in range(len(ids)) if a != b]
for key, title, kind, unit in [
    ("unidirectional_p2p_on", "Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)", "bw", "GB/s"),
    ("bidirectional_p2p_on", "Bidirectional P2P=Enabled Bandwidth Matrix (GB/s)", "bw", "GB/s"),
    ("latency_us_p2p_on", "P2P=Enabled Latency (P2P Writes) Matrix (us)", "lat", "us"),
    ("unidirectional_p2p_off", "Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)", "info", "GB/s"),
    ("bidirectional_p2p_off", "Bidirectional P2P=Disabled Bandwidth Matrix (GB/s)", "info", "GB/s"),
    ("latency_us_p2p_off", "P2P=Disabled Latency Matrix (us)", "info", "us"),
]:
    m = nv_matrix(title)
    for a, b in pairs:
        add(f"{key} GPU{ids[a]}->GPU{ids[b]} ({unit})", perf[key][a][b], m[a][b], kind)

runs = ours["nccl"]["runs"]
for section, run, kind in [("p2p", runs[0], "bw"), ("nop2p", runs[1], "info")]:
    ref = nt_busbw(section)
    label = "P2P" if section == "p2p" else "NCCL_P2P_DISABLE=1"
    for s in run["sizes"]:
        if s["bytes"] in ref:
            add(f"NCCL all_reduce busbw {s['bytes'] >> 20} MiB, {label} (GB/s)", s["busbw_gbps"], ref[s["bytes"]], kind)

rc_line = open(rcfile).read().split()
wall = float(rc_line[rc_line.index("wall") + 1])
print(open(machine).read().strip())
print(f"ours: p2p-verify {ours['version']}, NCCL {ours['nccl'].get('version')}, default verdict exit {ours['verdict']['exit_code']} ({ours['verdict']['status']})")
print()
print("| metric | ours | NVIDIA's tool | ratio | pass/fail |")
print("|---|---|---|---|---|")
for metric, o, n, ratio, ok in rows:
    print(f"| {metric} | {o:.2f} | {n:.2f} | {ratio:.3f} | {ok} |")
print(f"| default run wall time (s) | {wall:.1f} | limit 30 | - | {'PASS' if wall < 30 else 'FAIL'} |")
st = open(f"{out}/selftest.txt").read()
for mode in ("zero-chunk", "drop-chunk", "flip-bit"):
    m = re.search(rf"SELFTEST {mode} exit (\d+)", st)
    code = int(m.group(1)) if m else -1
    print(f"| self-test {mode} exit code | {code} | expected 21 | - | {'PASS' if code == 21 else 'FAIL'} |")
PY
rm -rf "${work}"
