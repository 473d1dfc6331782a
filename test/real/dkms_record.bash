# shellcheck shell=bash
# What lets the heavy chroot tests (test/real/dkms_chroot.bats, the cases of
# test/real/debian_userspace.bats) take turns with the matrix and with each
# other: a record of each one's last full pass (epoch and inputs digest), and
# a turns file saying when each last started and whether the time budget
# left it out since.

# inputs_digest REPO TAG ROOT [TAG2...]: the DKMS test's inputs digest:
# build.sh, lib/, the chroot scripts, the test, the series and the families
# of TAG and the TAG2s, their pins (not their "tested" column) and the chroot
# ROOT's package list.
inputs_digest() {
  local repo=$1 tag=$2 root=$3
  tree_digest "${repo}" "${root}" "${tag} ${*:4}" ci/heavy/dkms-chroot.sh test/real/dkms_chroot.bats
}

# userspace_digest REPO TAG ROOT: the same for a case of
# debian_userspace.bats.
userspace_digest() {
  tree_digest "$1" "$3" "$2" ci/heavy/debian-userspace.sh test/real/debian_userspace.bats
}

# container_digest REPO TAG: the same for test/real/container.bats (no
# chroot: its base is made by build.sh container from lib/'s recipe).
container_digest() {
  tree_digest "$1" - "$2" ci/heavy/container-test.sh ci/heavy/gpu-operator.sh ci/setup/debian-run.sh container/nvidia-driver \
    test/fixtures/gpu-operator test/real/container.bats
}

# tree_digest REPO ROOT "TAG..." FILE...: sha256 over build.sh, lib/,
# ci/setup/chroot.sh, ci/setup/chroots.conf, ci/setup/ccache-compilers.sh,
# ci/heavy/chroot-checks.sh, the series, this
# file, the FILEs, the patches of each TAG's family, the pins of each TAG
# and ROOT's dpkg status (none for ROOT "-"; status 1: a TAG is not in
# versions.conf).
tree_digest() {
  local repo=$1 root=$2 t family
  local -a tags families=()
  read -r -a tags <<<"$3"
  shift 3
  for t in "${tags[@]}"; do
    family=$(awk -v t="${t}" '$1 == t { print $2 }' "${repo}/versions.conf")
    [[ -n ${family} ]] || return 1
    families+=("patches/${family}")
  done
  {
    (cd "${repo}" && find build.sh lib ci/setup/chroot.sh ci/setup/chroots.conf ci/setup/ccache-compilers.sh ci/heavy/chroot-checks.sh series "${families[@]}" \
      test/real/dkms_record.bash "$@" -type f -print0 | sort -zu | xargs -0 sha256sum)
    for t in "${tags[@]}"; do
      awk -v t="${t}" '$1 == t { NF = 7; print }' "${repo}/versions.conf"
    done
    [[ ${root} == - ]] || sha256sum <"${root}/var/lib/dpkg/status"
  } | sha256sum | cut -d' ' -f1
}

# recent_pass RECORD DIGEST DAYS [VAR]: why this run can be left out (RECORD
# holds a pass with the same DIGEST, fewer than DAYS days old), or nothing.
# The environment variable VAR (default NVP2P_TEST_DKMS) set to "always":
# never left out.
recent_pass() {
  local var=${4:-NVP2P_TEST_DKMS} when digest age
  [[ ${!var:-} != always && -r $1 ]] || return 0
  read -r when digest _ <"$1" || return 0
  [[ ${digest} == "$2" && ${when} =~ ^[0-9]+$ ]] || return 0
  age=$((($(date +%s) - when) / 86400))
  [[ ${age} -lt $3 ]] || return 0
  printf 'passed on %s with the same inputs (digest %s, %s of %s days old): its time goes to the matrix; %s=always runs it\n' \
    "$(date -u -d "@${when}" '+%F %H:%M UTC')" "${digest:0:12}" "${age}" "$3" "${var}"
}

# record_result RECORD DIGEST STEPS N: RECORD says DIGEST passed now when the
# STEPS file has N passing steps and no failing one; otherwise RECORD goes.
record_result() {
  local pass fail
  pass=$(grep -c '^PASS ' "$3" || true)
  fail=$(grep -c '^FAIL ' "$3" || true)
  if [[ ${pass} -eq $4 && ${fail} -eq 0 ]]; then
    printf '%s %s\n' "$(date +%s)" "$2" >"$1.tmp" && mv -f -- "$1.tmp" "$1"
  else
    rm -f -- "$1"
  fi
}

# Minutes kept free for the matrix and the tests after it when a heavy test
# decides whether it fits before NVP2P_TEST_DEADLINE.
HEAVY_RESERVE_MIN=20

# real_git_dir CACHE: the upstream repository (NVP2P_TEST_GIT, else a clone
# of the bundle into CACHE), or why there is none (status 1). Needs REPO_ROOT.
real_git_dir() {
  local bundle=${NVP2P_UPSTREAM_BUNDLE:-${REPO_ROOT}/../shared/upstream/open-gpu-kernel-modules.bundle}
  if [[ -n ${NVP2P_TEST_GIT:-} ]]; then
    printf '%s\n' "${NVP2P_TEST_GIT}"
  elif [[ -f ${bundle} ]]; then
    "${REPO_ROOT}/ci/setup/upstream-git.sh" "${bundle}" "$1/upstream.git" 2>&1 || return 1
  else
    echo "no upstream git repository: set NVP2P_TEST_GIT, or put the bundle at ${bundle}"
    return 1
  fi
}

# heavy_left: minutes before NVP2P_TEST_DEADLINE (test_helper's
# minutes_left) less HEAVY_RESERVE_MIN (nothing without a deadline).
heavy_left() {
  local left
  left=$(minutes_left)
  [[ -z ${left} ]] || printf '%s\n' "$((left - HEAVY_RESERVE_MIN))"
}

# heavy_gate TURNS NAME NEED RECORD DIGEST DAYS VAR: the one gate of every
# heavy test: why NAME does not run now, or nothing (it runs; TURNS notes
# that it started). It does not run when RECORD holds a pass with the same
# DIGEST fewer than DAYS days old (recent_pass; VAR=always runs it anyway),
# when the NEED minutes do not fit before the deadline, or when another
# heavy test left out for time has waited longer (heavy_turn).
heavy_gate() {
  local turns=$1 name=$2 need=$3 why
  why=$(recent_pass "$4" "$5" "$6" "$7")
  if [[ -n ${why} ]]; then
    turn_mark "${turns}" "${name}" idle "${need}"
    printf '%s\n' "${why}"
    return 0
  fi
  heavy_turn "${turns}" "${name}" "${need}"
}

# new_chroot_fits DIR TURNS NAME NEED: why NAME cannot even start when its
# chroot DIR is not made yet (making it takes minutes of its own, so the time
# check does not wait for the record), or nothing.
new_chroot_fits() {
  [[ -d $1/root ]] || heavy_fits "$2" "$3" "$4"
}

# heavy_fits TURNS NAME NEED: why NAME cannot run in the time left (and
# TURNS notes it was left out), or nothing.
heavy_fits() {
  local left
  left=$(heavy_left)
  [[ -z ${left} || ${left} -ge $3 ]] && return 0
  turn_mark "$1" "$2" starved "$3"
  printf 'time budget: %s min left before the deadline (less %s for the matrix and the tests after it), this needs %s\n' \
    "${left}" "${HEAVY_RESERVE_MIN}" "$3"
}

# heavy_turn TURNS NAME NEED: NAME starts now (nothing printed, TURNS notes
# it), or why not: the time left, or another heavy test's turn.
heavy_turn() {
  local why left
  why=$(heavy_fits "$@")
  [[ -z ${why} ]] || { printf '%s\n' "${why}" && return 0; }
  left=$(heavy_left)
  if [[ -n ${left} ]]; then
    why=$(turn_yield "$1" "$2" "${left}" "$3")
    if [[ -n ${why} ]]; then
      turn_mark "$1" "$2" starved "$3"
      printf 'time budget: %s\n' "${why}"
      return 0
    fi
  fi
  turn_mark "$1" "$2" started "$3"
}

# Turns. TURNS is a file of lines "NAME LAST_START STARVED NEED": when NAME
# last started (epoch, 0: never), whether the time budget left it out since
# (1) or not (0), and the minutes it needs. Without it, whichever heavy test
# comes first in the run would take the time every run and the later ones
# would never get it.

# turn_mark TURNS NAME started|starved|idle NEED: NAME started now, was left
# out for time, or did not need to run (a recent pass); NEED its minutes.
turn_mark() {
  local turns=$1 name=$2 what=$3 need=$4 start=0 starved=0 n s x _
  if [[ -r ${turns} ]]; then
    while read -r n s x _; do
      [[ ${n} == "${name}" && ${s} =~ ^[0-9]+$ ]] && start=${s} && starved=${x}
    done <"${turns}"
  fi
  case ${what} in
  started) start=$(date +%s) starved=0 ;;
  starved) starved=1 ;;
  idle) starved=0 ;;
  *) return 2 ;;
  esac
  {
    [[ -r ${turns} ]] && awk -v n="${name}" '$1 != n' "${turns}"
    printf '%s %s %s %s\n' "${name}" "${start}" "${starved}" "${need}"
  } >"${turns}.tmp" && mv -f -- "${turns}.tmp" "${turns}"
}

# turn_yield TURNS NAME LEFT NEED: why NAME, which needs NEED of the LEFT
# minutes, gives its turn away now, or nothing: another heavy test was left
# out for time and has waited longer since its last start than NAME, LEFT
# holds that one but not both. A test that needs more than LEFT cannot run
# later in this run either: giving way to it would leave both out (every run
# where its need does not fit the CI window).
turn_yield() {
  local turns=$1 name=$2 left=$3 need=$4 mine=0 n s x w
  [[ -r ${turns} ]] || return 0
  while read -r n s x w; do
    [[ ${n} == "${name}" && ${s} =~ ^[0-9]+$ ]] && mine=${s}
  done <"${turns}"
  while read -r n s x w; do
    [[ ${n} != "${name}" && ${x} == 1 && ${s} =~ ^[0-9]+$ && ${w} =~ ^[0-9]+$ ]] || continue
    if [[ ${s} -lt ${mine} && ${w} -le ${left} && ${left} -lt $((need + w)) ]]; then
      printf 'its turn goes to %s, left out for time since this last ran: %s min are left, the two need %s\n' \
        "${n}" "${left}" "$((need + w))"
      return 0
    fi
  done <"${turns}"
}

# passed_in STEPS LOG PREFIX...: the steps (PASS/FAIL lines in STEPS) whose
# names start with each PREFIX passed; otherwise the step list, LOG's tail
# and the step that did not pass are shown (status 1).
passed_in() {
  local steps=$1 log=$2 p line
  shift 2
  for p in "$@"; do
    line=$(grep -E "^(PASS|FAIL) ${p}" "${steps}" | head -n 1) || true
    if [[ ${line} != PASS* ]]; then
      cat "${steps}"
      tail -n 60 "${log:-/dev/null}" 2>/dev/null || true
      echo "step '${p}': ${line:-did not run}"
      return 1
    fi
  done
}
