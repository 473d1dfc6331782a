# shellcheck shell=bash
# bench-lib.sh - what the bench scripts share (sourced by run-hazards.sh and
# run-room.sh): NVLink multicast off, NCCL from the python package where
# $NCCL_HOME is not set, section headings, the summary's check lines, timing,
# and the build of p2p-verify. Needs $out (the output folder) and $repo.

# NVLink multicast must stay off on shared machines.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

if [[ -z ${NCCL_HOME:-} ]]; then
    nccl_dir="$(python3 -c 'import nvidia.nccl, os; print(os.path.realpath(nvidia.nccl.__path__[0]))' 2>/dev/null)" &&
        export NCCL_HOME="${nccl_dir}"
fi

note() { printf '\n##### %s (%s)\n' "$*" "$(date -u +%H:%M:%S)"; }
summary="${out:?}/summary.txt"
: >"${summary}"
# check NAME EXPECTED ACTUAL SECONDS: one line of the summary
check() {
    local verdict=FAIL
    [[ $2 == "$3" ]] && verdict=PASS
    printf '%-58s expected %-3s got %-3s %7.2f s  %s\n' "$1" "$2" "$3" "$4" "${verdict}" | tee -a "${summary}"
}
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

# build_tool: p2p-verify for ARCH (default 90), timed in the summary.
build_tool() {
    local t0
    note "build"
    t0=$(now)
    make -C "${repo:?}/verify" ARCHS="${ARCH:-90}" -j16 >"${out}/build.log" 2>&1 || { cat "${out}/build.log"; exit 1; }
    rm -f "${out}/build.log"
    printf 'build %s s\n' "$(secs "${t0}" "$(now)")" | tee -a "${summary}"
}
