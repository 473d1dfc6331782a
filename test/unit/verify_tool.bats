#!/usr/bin/env bats
# Tests of verify/ (p2p-verify): the pure-C unit tests, the CUDA build, and the
# behaviour of the binary on a machine without GPUs (CI has none).

setup_file() {
    REPO_ROOT="$(cd "${BATS_TEST_DIRNAME}/../.." && pwd)"
    export REPO_ROOT
}

setup() {
    bats_load_library bats-support
    bats_load_library bats-assert
    VERIFY_DIR="${REPO_ROOT}/verify"
    TOOL="${VERIFY_DIR}/p2p-verify"
}

find_nvcc() {
    if [[ -n "${NVCC:-}" && -x "${NVCC}" ]]; then
        printf '%s\n' "${NVCC}"
    elif command -v nvcc >/dev/null 2>&1; then
        command -v nvcc
    elif [[ -x /usr/local/cuda/bin/nvcc ]]; then
        printf '%s\n' /usr/local/cuda/bin/nvcc
    else
        return 1
    fi
}

build_tool() {
    local nvcc
    nvcc="$(find_nvcc)" || skip "nvcc not found"
    run make -C "${VERIFY_DIR}" NVCC="${nvcc}"
    assert_success
    [[ -x "${TOOL}" ]]
}

gpu_present() {
    command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU '
}

@test "make -C verify check: pure-C unit tests pass" {
    run make -C "${VERIFY_DIR}" check
    assert_success
    assert_output --regexp '[0-9]+ checks, 0 failed'
    refute_output --partial 'FAILED'
    refute_output --partial 'FAIL '
}

@test "unit test runner fails when a fixture is missing (tests can fail)" {
    run make -C "${VERIFY_DIR}" check
    assert_success
    local empty
    empty="$(mktemp -d)"
    run "${VERIFY_DIR}/build/test_runner" "${empty}"
    rmdir "${empty}"
    assert_failure
    assert_output --partial 'cannot open fixture'
}

@test "p2p-verify builds with nvcc" {
    build_tool
    run "${TOOL}" --version
    assert_success
    assert_output --regexp '^p2p-verify [0-9]+\.[0-9]+\.[0-9]+$'
}

@test "p2p-verify --help documents options and every exit code" {
    build_tool
    run "${TOOL}" --help
    assert_success
    for needle in --pairs --sizes --quick --no-nccl --no-perf --perf-peer-off --json --self-test --nccl-lib \
        --no-hazards --managed 'Xid 31' 'Xid 154' comp-corrupt lost-update flag-before-data managed-corrupt \
        ' 0  every pair' ' 2  usage error' '20  no P2P' '21  data corruption' \
        '22  CUDA/runtime error' '23  NCCL error' '24  fewer than two GPUs'; do
        assert_output --partial "${needle}"
    done
}

@test "p2p-verify: bad options exit 2 with a message" {
    build_tool
    run "${TOOL}" --bogus
    assert_equal "${status}" 2
    assert_output --partial "unknown option '--bogus'"
    run "${TOOL}" --sizes 0
    assert_equal "${status}" 2
    assert_output --partial '--sizes'
    run "${TOOL}" --self-test melt
    assert_equal "${status}" 2
    assert_output --partial 'unknown mode'
    run "${TOOL}" --pairs 0-0
    assert_equal "${status}" 2
    # the managed-memory test is opt-in: its self-test too
    run "${TOOL}" --self-test managed-corrupt
    assert_equal "${status}" 2
    assert_output --partial '--self-test managed-corrupt needs --managed'
    run "${TOOL}" --managed=yes
    assert_equal "${status}" 2
}

@test "p2p-verify without GPUs: exit 24 or 22 with a clear message, never a pass" {
    build_tool
    if gpu_present; then
        skip "a GPU is present: this test covers GPU-less machines (run p2p-verify itself there)"
    fi
    run "${TOOL}" --no-nccl
    refute [ "${status}" -eq 0 ]
    [[ "${status}" -eq 24 || "${status}" -eq 22 ]]
    assert_output --regexp 'VERDICT: (FEWER-THAN-2-GPUS \(exit 24\)|CUDA-ERROR \(exit 22\))'
    assert_output --regexp '(cudaGetDeviceCount|GPUs? visible)'
}

@test "p2p-verify --json without GPUs: valid JSON on stdout, same verdict" {
    build_tool
    if gpu_present; then
        skip "a GPU is present: this test covers GPU-less machines"
    fi
    command -v python3 >/dev/null 2>&1 || skip "python3 not found"
    local out
    out="$(mktemp)"
    run bash -c '"$1" --json 2>/dev/null >"$2"' _ "${TOOL}" "${out}"
    [[ "${status}" -eq 24 || "${status}" -eq 22 ]]
    run python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["verdict"]["exit_code"], d["verdict"]["status"])' "${out}"
    rm -f "${out}"
    assert_success
    assert_output --regexp '^(24 FEWER-THAN-2-GPUS|22 CUDA-ERROR)$'
}

gpu_count() {
    if command -v nvidia-smi >/dev/null 2>&1; then
        nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true
    else
        echo 0
    fi
}

@test "p2p-verify --self-test catches injected corruption (exit 21) on >= 2 GPUs" {
    build_tool
    if [[ "$(gpu_count)" -lt 2 ]]; then
        skip "needs two GPUs"
    fi
    local mode
    for mode in zero-chunk drop-chunk flip-bit; do
        run "${TOOL}" --self-test "${mode}" --pairs 0-1
        if [[ ${status} -eq 22 ]] && [[ ${output} =~ GPU0-\>GPU1\ +${test}\ +(not\ applicable|refused) ]]; then
            # a GPU without compressible memory (or a driver refusing to share it): nothing to inject into,
            # and the self-test says so instead of passing
            assert_output --partial "self-test ${mode}: no failure was injected"
            continue
        fi
        assert_equal "${status}" 21
        assert_output --regexp 'CORRUPTION GPU0->GPU1 cudaMemcpyPeerAsync size=[0-9]+ first bad offset 0x[0-9a-f]+: expected 0x[0-9a-f]{2} found 0x[0-9a-f]{2}'
        assert_output --partial "self-test: ${mode} injected at offset"
        assert_output --partial 'caught at exactly that offset'
        refute_output --partial 'SELF-TEST MISSED'
    done
}

@test "p2p-verify hazard self-tests: each injected failure is caught (exit 21) on >= 2 GPUs" {
    build_tool
    if [[ "$(gpu_count)" -lt 2 ]]; then
        skip "needs two GPUs"
    fi
    local mode test
    for mode in comp-corrupt:compressible lost-update:atomics flag-before-data:ordering stale:stale; do
        test="${mode#*:}"
        mode="${mode%%:*}"
        run "${TOOL}" --self-test "${mode}" --pairs 0-1
        if [[ ${status} -eq 22 ]] && [[ ${output} =~ GPU0-\>GPU1\ +${test}\ +(not\ applicable|refused) ]]; then
            # a GPU without compressible memory (or a driver refusing to share it): nothing to inject into,
            # and the self-test says so instead of passing
            assert_output --partial "self-test ${mode}: no failure was injected"
            continue
        fi
        assert_equal "${status}" 21
        assert_output --regexp "GPU0->GPU1 +${test} +FAIL: "
        assert_output --partial "^ self-test: ${mode} injected"
        refute_output --partial 'SELF-TEST MISSED'
    done
}

@test "verify shell scripts are shellcheck-clean" {
    command -v shellcheck >/dev/null 2>&1 || skip "shellcheck not found"
    run shellcheck -x "${VERIFY_DIR}/bench/run-h200.sh" "${VERIFY_DIR}/bench/run-hazards.sh" "${VERIFY_DIR}/bench/run-room.sh" "${VERIFY_DIR}/bench/bench-lib.sh"
    assert_success
}
