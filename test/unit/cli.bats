#!/usr/bin/env bats
# Command line, help, list/check, versions.conf parsing and tag validation.

load ../test_helper

setup() {
  common_setup
}

@test "no arguments prints usage on stdout and exits 2" {
  run_build
  assert_failure 2
  assert_output --partial "Usage: build.sh <tag>"
}

@test "--help prints usage and exits 0" {
  run_build --help
  assert_success
  assert_output --partial "Commands:"
  assert_output --partial "--dry-run"
}

@test "every command has --help next to it, and help <command> shows the same" {
  local c
  for c in fetch patch build install uninstall preflight verify list check package doctor repo; do
    run_build "${c}" --help
    assert_success
    assert_output --partial "Usage: build.sh ${c}"
    local via_flag=${output}
    run_build help "${c}"
    assert_success
    assert_equal "${output}" "${via_flag}"
  done
  run_build 565.57.01 --help
  assert_success
  assert_output --partial "The whole pipeline"
}

# cli_eval CODE ARGS...: CODE run in a bash that sourced build.sh.
cli_eval() {
  local code=$1
  shift
  bash -c "source \"\$1\" && shift && ${code}" _ "${BUILD_SH}" "$@"
}

@test "every option a command accepts is described in its help's text, below the Usage line" {
  local c o opts body
  for c in fetch patch build install package container uninstall preflight rebase repo doctor verify; do
    # shellcheck disable=SC2016 # expanded by the inner bash
    opts=$(cli_eval 'printf "%s\n" "${P2P_CMD_OPTS[$1]}"' "${c}")
    [[ -n ${opts} ]] || fail "no options for ${c}"
    run_build help "${c}"
    assert_success
    body=$(sed '1,/^$/d' <<<"${output}")
    for o in ${opts}; do
      grep -q -e "${o}\b" <<<"${body}" || fail "help ${c} does not describe ${o}"
    done
  done
}

@test "the pipeline's help lists the options of the stage commands, which describe them" {
  local o all stages
  # shellcheck disable=SC2016 # expanded by the inner bash
  all=$(cli_eval 'printf "%s\n" "${P2P_CMD_OPTS[all]}"')
  # shellcheck disable=SC2016 # expanded by the inner bash
  stages=$(cli_eval 'printf "%s\n" "${P2P_CMD_OPTS[fetch]} ${P2P_CMD_OPTS[build]} ${P2P_CMD_OPTS[install]}"')
  run_build help all
  assert_success
  assert_output --partial "Options are those of the stage commands"
  for o in ${all}; do
    [[ " ${stages} " == *" ${o} "* ]] || fail "${o}: an option of the pipeline that no stage command has"
  done
}

@test "the Usage line of each command's help is its synopsis: every option, and its value" {
  run_build help install
  assert_success
  assert_line --index 0 --regexp '^Usage: build\.sh install <tag> \[--kernel KVER\] '
  assert_output --partial "[--userspace auto|keep|run | --no-userspace]"
  assert_output --partial "[--sign-key FILE --sign-cert FILE | --sign-generate]"
  run_build help all
  assert_line --index 0 --regexp '^Usage: build\.sh <tag> \[--kernel KVER \| --kernel-src DIR\]'
  # wrapped before 80 columns between groups, continued under <tag>
  local line
  while IFS= read -r line; do
    [[ ${#line} -le 80 ]] || fail "longer than 80 columns: ${line}"
  done < <(sed '/^$/q' <<<"${output}")
  assert_line --index 1 --regexp '^ {16}\[--'
}

@test "every command's help starts with its synopsis from the one table, and every command is in it" {
  local c cmds
  # shellcheck disable=SC2016 # expanded by the inner bash
  cmds=$(cli_eval 'declare -F | awk "{ print \$3 }" | sed -n "s/^help_//p" | grep -v -x -e exit_codes -e page -e help')
  [[ $(wc -w <<<"${cmds}") -ge 15 ]] || fail "only these commands: ${cmds}"
  for c in ${cmds}; do
    # shellcheck disable=SC2016 # expanded by the inner bash
    run cli_eval '[[ -n ${P2P_CMD_USAGE[$1]+x} ]] && usage_synopsis "$1"' "${c}"
    assert_success
    local synopsis=${output}
    run_build help "${c}"
    assert_success
    [[ ${output} == "${synopsis}"$'\n'* ]] || fail "help ${c} does not start with its synopsis: ${synopsis}"
  done
}

@test "the parser takes from the synopses which options take a value: the same in every command" {
  local c o
  # shellcheck disable=SC2016 # expanded by the inner bash
  run cli_eval 'for c in "${!P2P_CMD_USAGE[@]}"; do
      P2P_OPT_VALUE=(); synopsis_opts "${c}"
      for o in ${P2P_CMD_OPTS[$c]}; do printf "%s %s %s\n" "${o}" "${P2P_OPT_VALUE[$o]:+value}" "${c}"; done
    done'
  assert_success
  local -A kind=()
  while read -r o v c; do
    [[ ${v} == value ]] || v=flag
    [[ -z ${kind[${o}]:-} || ${kind[${o}]} == "${v}" ]] || fail "${o} is a ${v} in ${c} but a ${kind[${o}]} elsewhere"
    kind[${o}]=${v}
  done <<<"${output}"
  [[ ${kind[--kernel]} == value && ${kind[--no-dkms]} == flag && ${kind[--sign-generate]} == flag &&
    ${kind[--userspace]} == value && ${kind[--force-static-bar1]} == value && ${kind[--chroot]} == value ]] ||
    fail "wrong kinds: $(declare -p kind)"
}

@test "every option of a synopsis sets something (no internal error from the parser)" {
  local o
  # shellcheck disable=SC2016 # expanded by the inner bash
  for o in $(cli_eval 'printf "%s\n" "${!P2P_OPT_VALUE[@]}"'); do
    # shellcheck disable=SC2016 # expanded by the inner bash
    run cli_eval 'if [[ -n ${P2P_OPT_VALUE[$1]} ]]; then set_opt_value "$1" x; else set_opt_flag "$1"; fi' "${o}"
    refute_output --partial "internal:"
    [[ ${status} -eq 0 || ${status} -eq 2 ]] || fail "${o}: exit ${status}: ${output}"
  done
  # shellcheck disable=SC2016 # expanded by the inner bash
  run cli_eval 'set_opt_flag --no-such-flag'
  assert_failure 1
  assert_output --partial "internal: option --no-such-flag is in a synopsis"
}

@test "repo and doctor parse through the table: unknown, not applying, missing values, --opt=value, operands anywhere" {
  run_build repo "${BATS_TEST_TMPDIR}/r" 565.57.01 --bogus
  assert_failure 2
  assert_output "build.sh: unknown option '--bogus' for repo (see: build.sh help repo)"
  run_build repo "${BATS_TEST_TMPDIR}/r" 565.57.01 --kernel 6.1.0-1-amd64
  assert_failure 2
  assert_output "build.sh: option --kernel does not apply to repo (see: build.sh help repo)"
  run_build repo "${BATS_TEST_TMPDIR}/r" 565.57.01 --suite
  assert_failure 2
  assert_output "build.sh: --suite needs a value"
  # --opt=value and operands after options; --key=VALUE against --generate-key
  run_build repo --key=a "${BATS_TEST_TMPDIR}/r" --generate-key 565.57.01
  assert_failure 2
  assert_output "build.sh: --key and --generate-key exclude each other"
  run_build repo --suite=Bad "${BATS_TEST_TMPDIR}/r" 565.57.01
  assert_failure 2
  assert_output "build.sh: --suite 'Bad': lower-case letters, digits, . + - only"
  assert_not_exist "${BATS_TEST_TMPDIR}/r"
  run_build doctor --bogus
  assert_failure 2
  assert_output "build.sh: unknown option '--bogus' for doctor (see: build.sh help doctor)"
  run_build doctor somewhere
  assert_failure 2
  assert_output "build.sh: unexpected argument 'somewhere' for doctor (see: build.sh help doctor)"
  run_build doctor --collect
  assert_failure 2
  assert_output "build.sh: --collect needs a value"
  run_build doctor --from "${BATS_TEST_TMPDIR}" --verify
  assert_failure 2
  assert_output "build.sh: --verify runs on this machine; it does not apply to --from"
}

@test "an option no command has is unknown; one of another command does not apply; a flag takes no value" {
  run_build fetch 565.57.01 --bogus
  assert_failure 2
  assert_output "build.sh: unknown option '--bogus' for fetch (see: build.sh help fetch)"
  run_build fetch 565.57.01 --kernel 6.1.0-1-amd64
  assert_failure 2
  assert_output "build.sh: option --kernel does not apply to fetch (see: build.sh help fetch)"
  run_build fetch 565.57.01 --no-run=yes
  assert_failure 2
  assert_output "build.sh: unexpected argument 'yes'"
  run_build build 565.57.01 --kernel
  assert_failure 2
  assert_output "build.sh: --kernel needs a value"
}

@test "the sudo hand-over of the pipeline's install step passes on every install option the pipeline takes" {
  local o all install
  # shellcheck disable=SC2016 # expanded by the inner bash
  all=$(cli_eval 'printf "%s\n" "${P2P_CMD_OPTS[all]}"')
  # shellcheck disable=SC2016 # expanded by the inner bash
  install=$(cli_eval 'printf "%s\n" "${P2P_CMD_OPTS[install]}"')
  # every setting on: each option the two share comes back (--no-userspace as --userspace keep)
  # shellcheck disable=SC2016 # expanded by the inner bash
  run cli_eval 'P2P_KERNEL=6.1.0-1-amd64 P2P_KREL=6.1.0-1-amd64 P2P_NO_DKMS=1 P2P_NO_USERSPACE=1
      P2P_NVLINK=off P2P_STATIC_BAR1=0000:01:00.0 P2P_SIGN_GENERATE=1 P2P_SIGN_SOURCE=user
      P2P_SIGN_KEY=/k P2P_SIGN_CERT=/c P2P_RUN_FILE=/r P2P_RUN_SHA256=abc
      a=(); for o in ${P2P_CMD_OPTS[install]}; do
        [[ " ${P2P_CMD_OPTS[all]} " == *" ${o} "* ]] && handover_opt a "${o}"; done; printf "%s\n" "${a[@]}"'
  assert_success
  for o in ${install}; do
    [[ " ${all} " == *" ${o} "* ]] || continue
    [[ ${o} == --no-userspace ]] && continue
    assert_line "${o}"
  done
  assert_line keep
  # an option the pipeline and install share but the hand-over does not know is an internal error
  # shellcheck disable=SC2016 # expanded by the inner bash
  run cli_eval 'a=(); handover_opt a --no-such-option'
  assert_failure 1
  assert_output --partial "does not hand it to the install step"
}

@test "p2p-doctor's exit codes (drules.h) are build.sh's (common.sh): one set of numbers" {
  local name value ex n=0
  while read -r name value; do
    # shellcheck disable=SC2016 # expanded by the inner bash
    ex=$(bash -c 'source "$1" && v="EX_DOCTOR_$2" && printf "%s" "${!v}"' _ "${BUILD_SH}" "${name}")
    assert_equal "${name}=${value}" "${name}=${ex}"
    n=$((n + 1))
  done < <(sed -n -E 's/^[[:space:]]*DR_EXIT_(BLOCKED|INSUFFICIENT|NO_PAIR|UNREADABLE) = ([0-9]+),.*/\1 \2/p' "${REPO_ROOT}/verify/doctor/drules.h")
  assert_equal "${n}" 4
}

@test "help for an unknown topic fails with 2" {
  run_build help frobnicate
  assert_failure 2
  assert_output --partial "no help for 'frobnicate'"
}

@test "unknown command and unknown option exit 2" {
  run_build frobnicate
  assert_failure 2
  assert_output --partial "unknown command 'frobnicate'"
  run_build fetch 565.57.01 --frob
  assert_failure 2
  assert_output --partial "unknown option '--frob'"
}

@test "an option of another command is refused" {
  run_build fetch 565.57.01 --kernel 6.1.0-56-amd64
  assert_failure 2
  assert_output --partial "option --kernel does not apply to fetch"
}

@test "an option missing its value exits 2" {
  run_build fetch 565.57.01 --source
  assert_failure 2
  assert_output --partial "--source needs a value"
  run_build --cache-dir
  assert_failure 2
  assert_output --partial "--cache-dir needs a value"
}

@test "--kernel and --kernel-src together are refused" {
  run_build build 565.57.01 --kernel 6.1.0-56-amd64 --kernel-src /tmp
  assert_failure 2
  assert_output --partial "exclude each other"
}

@test "--run-sha256 must be 64 hex digits" {
  run_build fetch 565.57.01 --run-sha256 abc
  assert_failure 2
  assert_output --partial "64 hex digits"
}

@test "list groups every tag of versions.conf under its family, with what was verified" {
  run_build list
  assert_success
  local tag fam tested n=0
  while read -r tag fam _ _ _ _ _ tested; do
    [[ ${tag} =~ ^[0-9]{3}\. ]] || continue
    n=$((n + 1))
    assert_line --regexp "^family ${fam//./\\.}: [0-9]+ tags?, "
    assert_line --regexp "^  ${tag//./\\.} +${tested//./\\.} +(no|cached) +"
    # The tag is listed under its own family's heading.
    assert_equal "$(awk -v t="${tag}" '/^family /{f=$2} $1==t{print f}' <<<"${output}")" "${fam}:"
  done <"${REPO_ROOT}/versions.conf"
  assert_equal "$(grep -c -E '^  [0-9]{3}\.' <<<"${output}")" "${n}"
  assert_line --regexp '^  TAG +VERIFIED +SOURCE +RUN$'
  # a legend for the columns, after the last table
  assert_line --regexp '^VERIFIED  what this project checked'
  assert_line --regexp '^SOURCE    cached: '
  assert_line --regexp '^RUN       NVIDIA'
  assert_output --partial '"sha256 unknown": versions.conf pins no checksum'
  # One column each: SOURCE starts at the same place on every line, the
  # longest VERIFIED included.
  local col
  col=$(awk '$1 == "TAG" { print index($0, "SOURCE") }' <<<"${output}" | sort -u)
  assert_equal "$(wc -l <<<"${col}")" 1
  assert_equal "$(awk -v c="${col}" '/^  [0-9][0-9][0-9]\./ { print substr($0, c - 1) ~ /^ (no|cached) / ? "ok" : $1 }' <<<"${output}" | sort -u)" ok
}

@test "check succeeds for every tag in versions.conf and lists its patches" {
  local tag
  for tag in 535.261.03 555.58.02 565.57.01; do
    run_build check "${tag}"
    assert_success
    assert_output --partial "${tag}: supported"
    assert_output --partial "p2p-0001-bar1-p2p-hal-for-all-gpus.patch"
    assert_output --partial "compat-0001-pci-resize-resource-exclude-bars.patch"
  done
}

@test "check of an unknown tag exits 3" {
  run_build check 999.99.99
  assert_failure 3
  assert_output --partial "tag 999.99.99 is not in versions.conf"
  assert_output --partial "build.sh rebase 999.99.99"
}

@test "tag strings with /, .., spaces or shell metacharacters are refused with 3 and create nothing" {
  local bad
  for bad in "../565.57.01" "565.57.01/x" "565 57 01" "565.57.01;id" "\$(id)" "565.57.*" "" "565.57.01.02"; do
    run_build fetch "${bad}"
    if [[ -z ${bad} ]]; then
      assert_failure 2
    else
      assert_failure 3
      assert_output --partial "is not a driver tag"
    fi
  done
  assert_not_exist "${CACHE}/src"
}

@test "the pipeline refuses a bad tag before doing anything" {
  run_build "565.57.01\$(touch x)" --dry-run
  assert_failure 3
  assert_not_exist x
}

@test "--version prints the version" {
  run_build --version
  assert_success
  assert_output --regexp '^build\.sh [0-9]+\.[0-9]+\.[0-9]+$'
}

@test "help exit-codes matches the table in docs/commands.md" {
  run_build help exit-codes
  assert_success
  local code desc n=0
  while IFS=$'\t' read -r code desc; do
    code=${code// /}
    [[ ${code} =~ ^[0-9]+$ ]] || continue
    n=$((n + 1))
    grep -q -F "| ${code} | ${desc} |" "${REPO_ROOT}/docs/commands.md" ||
      fail "docs/commands.md lacks exit code row: | ${code} | ${desc} |"
  done <<<"${output}"
  [[ ${n} -gt 20 ]] || fail "help exit-codes listed only ${n} codes"
  # and the docs have no row the table lacks
  local rows
  rows=$(sed -n '/^## Exit codes$/,/^## /p' "${REPO_ROOT}/docs/commands.md" | grep -c -E '^\| [0-9]+ \|')
  assert_equal "${rows} rows in docs/commands.md" "${n} rows in docs/commands.md"
}

@test "every exit code the code names (EX_*) is a row of the one table, with a name and a code of its own" {
  local name names
  # shellcheck disable=SC2016 # expanded by the inner bash
  names=$(bash -c 'source "$1" && for r in "${P2P_EXIT_CODES[@]}"; do read -r n c _ <<<"${r}"; printf "EX_%s %s\n" "${n}" "${c}"; done' _ "${BUILD_SH}")
  [[ $(wc -l <<<"${names}") -ge 20 ]] || fail "only: ${names}"
  [[ -z $(cut -d' ' -f1 <<<"${names}" | sort | uniq -d) ]] || fail "a name twice: ${names}"
  [[ -z $(cut -d' ' -f2 <<<"${names}" | sort | uniq -d) ]] || fail "a code twice: ${names}"
  while read -r name; do
    grep -q -x -F "${name}" < <(cut -d' ' -f1 <<<"${names}") || fail "${name} is named in the code but is no row of P2P_EXIT_CODES"
  done < <(grep -r -h -o -E '\bEX_[A-Z_]+\b' "${REPO_ROOT}/build.sh" "${REPO_ROOT}/lib" | sort -u)
  # shellcheck disable=SC2016 # expanded by the inner bash
  run bash -c 'source "$1" && echo "${EX_USAGE} ${EX_DOCTOR_UNREADABLE} ${EX_INTERRUPTED}" && EX_USAGE=3' _ "${BUILD_SH}"
  assert_failure
  assert_line "2 33 130"
  assert_output --partial "EX_USAGE: readonly variable"
}

# --- versions.conf parsing ------------------------------------------------------

write_versions() {
  export NVP2P_DATA_DIR="${BATS_TEST_TMPDIR}/data"
  mkdir -p "${NVP2P_DATA_DIR}"
  cp -a "${REPO_ROOT}/series" "${REPO_ROOT}/patches" "${NVP2P_DATA_DIR}/"
  printf '%s\n' "$@" >"${NVP2P_DATA_DIR}/versions.conf"
}

GOOD_LINE="565.57.01 565 d5a0858f901d15bda4c3d6db19a271507722a860 9ce2d2dae6b0ea5ecb9daba6fc54b1da71a9e58b 9e13db925ed29ea316554368cc342849891a787f 6eebe94e585e385e8804f5a74152df414887bf819cc21bd95b72acd0fb182c7a https://us.download.nvidia.com/XFree86/Linux-x86_64/565.57.01/NVIDIA-Linux-x86_64-565.57.01.run -"

@test "a well-formed versions.conf with comments parses" {
  write_versions "# comment" "" "${GOOD_LINE} # trailing comment"
  run_build list
  assert_success
  assert_line --regexp '^  565\.57\.01 '
}

@test "malformed versions.conf: wrong column count exits 4 with the line number" {
  write_versions "# c" "${GOOD_LINE% *}"
  run_build list
  assert_failure 4
  assert_output --partial "versions.conf:2: expected 8 columns"
}

@test "malformed versions.conf: bad ids, checksum, URL, family, tested column exit 4" {
  local -a f
  read -r -a f <<<"${GOOD_LINE}"
  local i bad
  for i in 1 2 3 4 5 6 7; do
    local -a g=("${f[@]}")
    case ${i} in
    1) bad="5/65" ;;
    2) bad="d5a0858f" ;;
    3) bad="XYZ2d2dae6b0ea5ecb9daba6fc54b1da71a9e58b" ;;
    4) bad="9e13db925ed29ea316554368cc342849891a787" ;;
    5) bad="6eebe94e" ;;
    6) bad="http://example.com/x.run" ;;
    7) bad="hardware" ;;
    esac
    g[i]=${bad}
    write_versions "${g[*]}"
    run_build list
    assert_failure 4
    assert_output --partial "versions.conf:1: bad"
  done
}

@test "malformed versions.conf: a duplicate tag exits 4" {
  write_versions "${GOOD_LINE}" "${GOOD_LINE}"
  run_build list
  assert_failure 4
  assert_output --partial "listed twice"
}

@test "versions.conf is data: shell in it is never executed" {
  write_versions "${GOOD_LINE}" "\$(touch ${BATS_TEST_TMPDIR}/pwned) x x x x x x x"
  run_build list
  assert_failure 4
  assert_not_exist "${BATS_TEST_TMPDIR}/pwned"
}

@test "an empty versions.conf exits 4" {
  write_versions "# nothing"
  run_build list
  assert_failure 4
  assert_output --partial "no tags"
}

@test "NO_COLOR: progress lines carry no escape sequences" {
  run_build 565.57.01 --dry-run --kernel 6.1.0-nonexistent
  refute_output --partial $'\033['
}

@test "verify --dry-run shows how the tool is built and run, with its arguments" {
  run_build --dry-run verify --quick --no-nccl
  assert_success
  assert_output --partial "would run: make -s -C ${REPO_ROOT}/verify"
  assert_output --partial "would run: ${REPO_ROOT}/verify/p2p-verify --quick --no-nccl"
}

@test "verify without nvcc is refused (10, a tool missing: a code of its table), naming the toolkit; a tool that does not compile is 8" {
  # verify/Makefile's own nvcc test, with no nvcc where CUDA_HOME says
  CUDA_HOME="${BATS_TEST_TMPDIR}/no-cuda" run_build verify --build-only
  assert_failure 10
  assert_output --partial "build.sh: the CUDA toolkit's nvcc is required to build verify/p2p-verify, and none was found (Debian: nvidia-cuda-toolkit"
  # nvcc there, the compile fails
  stub make - <<<'[[ " $* " == *" nvcc-present "* ]] || exit 2'
  run_build verify --build-only
  assert_failure 8
  assert_output --partial "could not build verify/p2p-verify with nvcc"
  # both are in the table, and verify's help says them
  run_build help exit-codes
  assert_output --regexp $'\n  10\t[^\n]*verify: nvcc'
  assert_output --regexp $'\n  8\t[^\n]*verify: verify/p2p-verify does not compile'
  run_build help verify
  assert_output --partial "build.sh's own codes: 10 without nvcc, 8 when the tool does not compile"
}

@test "help help prints the help of help (0)" {
  run_build help help
  assert_success
  assert_line "Usage: build.sh help [<command> | all | exit-codes | help]"
  assert_output --partial "help: this text"
  run_build help bogus
  assert_failure 2
}

@test "--cache-dir, --work-dir or --root naming a file is a usage error (2) on a build.sh: line, not mkdir's" {
  : >"${BATS_TEST_TMPDIR}/file"
  run_build --cache-dir "${BATS_TEST_TMPDIR}/file" fetch 565.57.01
  assert_failure 2
  assert_output "build.sh: --cache-dir ${BATS_TEST_TMPDIR}/file: ${BATS_TEST_TMPDIR}/file is not a directory"
  run "${BUILD_SH}" --cache-dir "${BATS_TEST_TMPDIR}/file/sub" list
  assert_failure 2
  assert_output "build.sh: --cache-dir ${BATS_TEST_TMPDIR}/file/sub: ${BATS_TEST_TMPDIR}/file is not a directory"
  run "${BUILD_SH}" --cache-dir "${CACHE}" --work-dir "${BATS_TEST_TMPDIR}/file" fetch 565.57.01
  assert_failure 2
  assert_output --partial "build.sh: --work-dir ${BATS_TEST_TMPDIR}/file: "
  run_build --root "${BATS_TEST_TMPDIR}/file" uninstall
  assert_failure 2
  assert_output --partial "build.sh: --root ${BATS_TEST_TMPDIR}/file: "
  # a directory that does not exist yet is made when needed
  run_build --cache-dir "${BATS_TEST_TMPDIR}/new/cache" list
  assert_success
}

@test "contradicting options are refused with 2, the same option twice with the same value is fine" {
  run_build install 565.57.01 --userspace run --no-userspace --dry-run
  assert_failure 2
  assert_output --partial "--userspace run and --no-userspace contradict each other: give one"
  run_build install 565.57.01 --no-userspace --userspace auto --dry-run
  assert_failure 2
  assert_output --partial "--no-userspace and --userspace auto contradict each other"
  run_build install 565.57.01 --nvlink keep --nvlink=off --dry-run
  assert_failure 2
  assert_output --partial "--nvlink keep and --nvlink off contradict each other"
  run_build fetch 565.57.01 --no-run --run /tmp/x.run
  assert_failure 2
  assert_output --partial "--no-run and --run contradict each other"
  run_build fetch 565.57.01 --run-sha256 "$(printf 'a%.0s' {1..64})" --no-run
  assert_failure 2
  assert_output --partial "--no-run and --run-sha256 contradict each other"
  # saying the same thing twice is no contradiction
  run_build check 565.57.01
  assert_success
  run_build patch 565.57.01 --out /tmp/a --out /tmp/b --dry-run
  assert_failure 2
  assert_output --partial "--out /tmp/a and --out /tmp/b contradict each other"
  run_build install 565.57.01 --userspace keep --no-userspace --no-dkms --no-dkms --nvlink off --nvlink off --dry-run
  refute_output --partial "contradict"
}

@test "an unlisted tag gets the hint that fits it: an abbreviation, older than supported, newer (rebase), in between" {
  unset NVP2P_DATA_DIR
  run_build check 580.95
  assert_failure 3
  assert_output --partial "tag 580.95 is not in versions.conf (see: build.sh list); did you mean 580.95.05?"
  run_build check 565.77
  assert_success
  run_build check 530.30.02
  assert_failure 3
  assert_output --partial "it is older than 535.54.03, the oldest tag this project supports"
  refute_output --partial "rebase"
  run_build check 999.1.1
  assert_failure 3
  assert_output --regexp "a release newer than [0-9.]+ is brought into support with: build.sh rebase 999\.1\.1"
  run_build check 570.999.01
  assert_failure 3
  assert_output --partial "between the listed 570.211.01 and 575.51.02: if NVIDIA released it, build.sh rebase 570.999.01"
  run_build 610.57 --dry-run
  assert_failure 3
  assert_output --partial "did you mean 610.57.04?"
}

@test "the help says which runs write a log, and a dry run writes none, as it says" {
  run_build --help
  assert_output --partial "names it
on its first line (build.sh: log: FILE); list, check, preflight, doctor,
help and --dry-run change nothing and write none."
  run_build --dry-run fetch 565.57.01
  assert_success
  refute_output --partial "log:"
  run_build list
  assert_success
  assert_not_exist "${CACHE}"
}
