#!/usr/bin/env bats
# Every shell file passes shellcheck (with no blanket disables) and bash -n.

load ../test_helper
bats_require_minimum_version 1.5.0

shell_files() {
  local f
  while IFS= read -r -d '' f; do
    case ${f} in
    *.sh | *.bash | *.bats | */test/run | */.ci/run) printf '%s\n' "${f}" ;;
    *) head -c 64 "${f}" 2>/dev/null | grep -qE '^#!.*(ba)?sh' && printf '%s\n' "${f}" ;;
    esac
  done < <(find "${REPO_ROOT}" -path "${REPO_ROOT}/.git" -prune -o -path "${REPO_ROOT}/.device-carry" -prune -o \
    -path "${REPO_ROOT}/verify/build" -prune -o -type f -print0)
}

@test "shellcheck reports nothing on any shell file, tests included" {
  command -v shellcheck >/dev/null || skip "shellcheck not installed"
  mapfile -t files < <(shell_files)
  [[ ${#files[@]} -gt 20 ]] || fail "found only ${#files[@]} shell files"
  # -x follows every sourced file again for each file checked (build.sh's
  # lib/ for most of them): the slowest test of the tier, so the files are
  # checked in parallel, four per shellcheck, one shellcheck per CPU.
  run bash -c 'printf "%s\0" "$@" | xargs -0 -n 4 -P "$(nproc)" shellcheck -x' _ "${files[@]}"
  assert_success
  assert_output ""
}

@test "no blanket shellcheck disables (file-wide or in .shellcheckrc)" {
  assert_not_exist "${REPO_ROOT}/.shellcheckrc"
  run grep -rn --include='*.sh' --include='*.bash' --include='*.bats' -E '^# shellcheck disable=' "${REPO_ROOT}/lib" "${REPO_ROOT}/ci" "${REPO_ROOT}/test" "${REPO_ROOT}/build.sh"
  assert_failure
}

@test "bash -n parses every bash file" {
  local f
  while IFS= read -r f; do
    case ${f} in *.bats | */standin.run.in) continue ;; esac
    bash -n "${f}" || fail "bash -n ${f}"
  done < <(shell_files)
}

@test "no eval, and versions.conf is never sourced" {
  run grep -rn -E '(^|[;&|[:space:]])eval[[:space:]]' "${REPO_ROOT}/build.sh" "${REPO_ROOT}/lib" "${REPO_ROOT}/ci"
  assert_failure
  run grep -rn -E '(^|[;&|({[:space:]])(source|\.)[[:space:]]+[^ ]*versions\.conf' "${REPO_ROOT}/build.sh" "${REPO_ROOT}/lib" "${REPO_ROOT}/ci"
  assert_failure
}

@test "lib/ is in layers: no file calls a function of a file not below it (ci/helpers/layers.sh)" {
  run "${REPO_ROOT}/ci/helpers/layers.sh" "${REPO_ROOT}"
  assert_success
  assert_output ""
  # the walk of `build.sh <tag>` goes down: the pipeline to install, install to DKMS
  run "${REPO_ROOT}/ci/helpers/layers.sh" --edges "${REPO_ROOT}"
  assert_success
  assert_line --regexp $'^lib/commands.sh\tlib/68-install.sh\tinstall_all\t[0-9]+$'
  assert_line --regexp $'^lib/68-install.sh\tlib/66-dkms.sh\tdkms_install_modules\t[0-9]+$'
  assert_line --regexp $'^lib/20-fetch.sh\tlib/03-checksums.sh\tverify_tree\t[0-9]+$'
}

# layers_copy: a copy of build.sh and lib/ to break.
layers_copy() {
  LC="${BATS_TEST_TMPDIR}/layers"
  mkdir -p "${LC}"
  cp -a "${REPO_ROOT}/build.sh" "${REPO_ROOT}/lib" "${LC}/"
}

@test "ci/helpers/layers.sh fails on a call upward, in \$(...) and in a here-document's \$(...), naming file and line" {
  layers_copy
  # shellcheck disable=SC2016 # the shell text added to the copy
  printf '%s\n' 'host_probe() {' '  local x' '  x="$(tag_series 1)"' '  cat <<EOF' 'see $(build_modules 1)' 'EOF' '}' >>"${LC}/lib/05-host.sh"
  run "${REPO_ROOT}/ci/helpers/layers.sh" "${LC}"
  assert_failure 1
  assert_output --partial "lib/05-host.sh:"
  assert_output --partial "calls tag_series of lib/06-family.sh, which is not below it (layer 6, not below 5)"
  assert_output --partial "calls build_modules of lib/50-build.sh, which is not below it (layer 50, not below 5)"
  assert_equal "$(grep -c 'calls' <<<"${output}")" 2
}

@test "ci/helpers/layers.sh fails on a read of a global of a file not below, but not on build.sh's, a here-document's text or a comment" {
  layers_copy
  # shellcheck disable=SC2016 # the shell text added to the copy
  printf '%s\n' 'host_modules() {' '  echo "${P2P_MODULES} $DKMS_MODULE ${#P2P_CMD_USAGE[@]} ${P2P_PATCHED_DIR}"' '  # ${P2P_PKG_NAME}' '}' >>"${LC}/lib/05-host.sh"
  # shellcheck disable=SC2016 # the shell text added to the copy
  printf '%s\n' 'pkg_text() {' '  cat <<EOF' 'LOWER_ONLY=1' 'EOF' '}' >>"${LC}/lib/75-package.sh"
  # shellcheck disable=SC2016 # the shell text added to the copy
  printf '%s\n' 'common_probe() { echo "${LOWER_ONLY:-}"; }' >>"${LC}/lib/common.sh"
  run "${REPO_ROOT}/ci/helpers/layers.sh" "${LC}"
  assert_failure 1
  assert_line --regexp '^layers\.sh: lib/05-host\.sh:[0-9]+ reads P2P_MODULES of lib/09-modopts\.sh, which is not below it \(layer 9, not below 5\)$'
  assert_line --regexp '^layers\.sh: lib/05-host\.sh:[0-9]+ reads DKMS_MODULE of lib/10-payload\.sh, which is not below it \(layer 10, not below 5\)$'
  # P2P_CMD_USAGE is below (02); P2P_PATCHED_DIR is build.sh's; the comment and
  # the here-document's LOWER_ONLY=1 are no global
  assert_equal "$(grep -c 'reads' <<<"${output}")" 2
}

@test "ci/helpers/layers.sh ignores names in strings, comments, quoted here-documents and case patterns" {
  layers_copy
  # shellcheck disable=SC2016 # the shell text added to the copy
  printf '%s\n' 'host_words() {' '  # build_modules would be wrong here' '  echo "build_modules (tag_series)"' \
    "  echo 'x; build_modules'" "  cat <<'EOF'" 'build_modules $(tag_series)' 'EOF' '  case $1 in' '  build_modules) : ;;' '  esac' '}' \
    >>"${LC}/lib/05-host.sh"
  run "${REPO_ROOT}/ci/helpers/layers.sh" "${LC}"
  assert_success
  assert_output ""
}

@test "ci/helpers/layers.sh fails on a lib file without a layer number and on sourcing out of order" {
  layers_copy
  printf '# shellcheck shell=bash\n' >"${LC}/lib/helpers.sh"
  run "${REPO_ROOT}/ci/helpers/layers.sh" "${LC}"
  assert_failure 1
  assert_output --partial "lib/helpers.sh has no layer: name it lib/NN-name.sh"
  assert_output --partial "build.sh does not source lib/helpers.sh"
  rm "${LC}/lib/helpers.sh"
  # the source line of common.sh moved after all others
  grep -v '/common.sh"$' "${REPO_ROOT}/build.sh" >"${LC}/build.sh"
  grep '^source .*/common.sh"$' "${REPO_ROOT}/build.sh" >>"${LC}/build.sh"
  run "${REPO_ROOT}/ci/helpers/layers.sh" "${LC}"
  assert_failure 1
  assert_output --partial "build.sh sources lib/common.sh out of layer order"
}

@test "ci/helpers/layers.sh: usage errors exit 2" {
  run "${REPO_ROOT}/ci/helpers/layers.sh" --bogus
  assert_failure 2
  assert_output --partial "unknown option '--bogus'"
  run "${REPO_ROOT}/ci/helpers/layers.sh" "${BATS_TEST_TMPDIR}"
  assert_failure 2
  assert_output --partial "no build.sh and lib/ there"
  run "${REPO_ROOT}/ci/helpers/layers.sh" --help
  assert_success
  assert_output --partial "Usage: ci/helpers/layers.sh"
}

@test "every script of ci/ that is run answers --help with its usage (exit 0), from a usage() of its own" {
  local f name n=0
  for f in "${REPO_ROOT}"/ci/*/*.sh; do
    [[ -x ${f} ]] || continue
    name=${f#"${REPO_ROOT}/"}
    grep -q -E '^usage\(\) \{|^source .*/usage\.sh"$' "${f}" || fail "${name} has no usage()"
    run --separate-stderr "${f}" --help
    [[ ${status} -eq 0 ]] || fail "${name} --help: exit ${status}"
    [[ -z ${stderr} ]] || fail "${name} --help wrote to stderr: ${stderr}"
    [[ ${lines[0]} == *"${name##*/}"* ]] || fail "${name} --help does not start with its name: ${lines[0]}"
    n=$((n + 1))
  done
  [[ ${n} -gt 20 ]] || fail "only ${n} scripts in ci/"
}

@test "a script of ci/ given a wrong command line says why on stderr and exits 2" {
  local s name
  for s in "setup/kernel-sysroot.sh" "setup/upstream-git.sh one" "workflows/job.sh" "setup/debian-sources.sh" \
    "setup/debian-run.sh a b" "heavy/dkms-chroot.sh a" "setup/deps.sh bogus" "workflows/gen-workflow.sh --bogus" \
    "workflows/readme-table.sh --bogus" "workflows/record-tested.sh"; do
    # shellcheck disable=SC2086 # the script and its arguments
    run --separate-stderr "${REPO_ROOT}"/ci/${s}
    [[ ${status} -eq 2 ]] || fail "ci/${s}: exit ${status}, not 2"
    [[ -z ${output} ]] || fail "ci/${s} wrote to stdout: ${output}"
    name=${s%% *}
    [[ ${stderr} == "${name##*/}: "* ]] || fail "ci/${s}: stderr does not start with the script's name: ${stderr}"
  done
}

@test "ci/ holds its files only in its role directories, and docs/layout.md lists each file in its directory's row" {
  local f name d n row
  local section
  section=$(sed -n '/^## ci\/ by role$/,/^## /p' "${REPO_ROOT}/docs/layout.md" | grep '^| ')
  for f in "${REPO_ROOT}"/ci/*; do
    [[ -d ${f} ]] || fail "ci/${f##*/} is not in a role directory"
  done
  for f in "${REPO_ROOT}"/ci/*/*; do
    name=${f##*/} d=${f%/*}
    d=${d##*/}
    row=$(grep -F "| \`ci/${d}/\` |" <<<"${section}") || fail "docs/layout.md has no row for ci/${d}/"
    n=$(grep -o -F "\`${name}\`" <<<"${row}" | wc -l)
    [[ ${n} -eq 1 ]] || fail "docs/layout.md names ci/${d}/${name} ${n} times in the row of ci/${d}/"
  done
  # and nothing that is not there
  local -a named
  while IFS= read -r row; do
    d=$(awk -F '|' '{ print $2 }' <<<"${row}" | tr -d ' `')
    [[ ${d} =~ ^ci/([a-z]+)/$ ]] || continue
    d=${BASH_REMATCH[1]}
    # shellcheck disable=SC2016 # backticks of Markdown, not a command substitution
    mapfile -t named < <(grep -o -E '`[a-z0-9.-]+\.(sh|conf)`' <<<"${row}" | tr -d '`')
    for name in "${named[@]}"; do
      [[ -e ${REPO_ROOT}/ci/${d}/${name} ]] || fail "docs/layout.md names ci/${d}/${name}, which does not exist"
    done
  done <<<"${section}"
}
