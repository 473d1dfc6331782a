#!/usr/bin/env bats
# Every shell file passes shellcheck (with no blanket disables) and bash -n.

load ../test_helper

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
  run shellcheck -x "${files[@]}"
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
