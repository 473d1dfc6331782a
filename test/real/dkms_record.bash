# shellcheck shell=bash
# What lets test/real/dkms_chroot.bats take turns with the matrix: a record
# of its last full pass (epoch and inputs digest) in the test cache.

# inputs_digest REPO TAG ROOT [TAG2...]: sha256 over what the DKMS test
# exercises: build.sh, lib/, the chroot scripts, the test, the series and
# TAG's family, the pins of TAG and the TAG2s (not their "tested" column)
# and the chroot ROOT's package list.
inputs_digest() {
  local repo=$1 tag=$2 root=$3 family t
  family=$(awk -v t="${tag}" '$1 == t { print $2 }' "${repo}/versions.conf")
  [[ -n ${family} ]] || return 1
  {
    (cd "${repo}" && find build.sh lib ci/dkms-chroot.sh ci/chroot.sh ci/chroots.conf series \
      "patches/${family}" test/real/dkms_chroot.bats test/real/dkms_record.bash \
      -type f -print0 | sort -z | xargs -0 sha256sum)
    for t in "${tag}" "${@:4}"; do
      awk -v t="${t}" '$1 == t { NF = 7; print }' "${repo}/versions.conf"
    done
    sha256sum <"${root}/var/lib/dpkg/status"
  } | sha256sum | cut -d' ' -f1
}

# recent_pass RECORD DIGEST DAYS: why this run can be left out (RECORD holds
# a pass with the same DIGEST, fewer than DAYS days old), or nothing.
# NVP2P_TEST_DKMS=always: never left out.
recent_pass() {
  local when digest age
  [[ ${NVP2P_TEST_DKMS:-} != always && -r $1 ]] || return 0
  read -r when digest _ <"$1" || return 0
  [[ ${digest} == "$2" && ${when} =~ ^[0-9]+$ ]] || return 0
  age=$((($(date +%s) - when) / 86400))
  [[ ${age} -lt $3 ]] || return 0
  printf 'passed on %s with the same inputs (digest %s, %s of %s days old): its time goes to the matrix; NVP2P_TEST_DKMS=always runs it\n' \
    "$(date -u -d "@${when}" '+%F %H:%M UTC')" "${digest:0:12}" "${age}" "$3"
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
