# shellcheck shell=bash
# Helpers of the tests with Debian's real driver packages (apt_debian.bats,
# debian_userspace.bats): the files `build.sh package` writes, made by its own
# functions. Needs REPO_ROOT.

# control_text TAG DIR: the control file build.sh package writes for TAG
# (status 3: TAG is not in versions.conf).
control_text() {
  # shellcheck source=build.sh
  source "${REPO_ROOT}/build.sh"
  versions_load
  [[ -n ${V_FAMILY[$1]:-} ]] || return 3
  deb_control "$1" "$2"
}

# conf_text modprobe|depmod TAG: that file's text as build.sh package writes it.
conf_text() {
  # shellcheck source=build.sh
  source "${REPO_ROOT}/build.sh"
  versions_load
  case $1 in
  modprobe) modprobe_conf_text "$2" ;;
  depmod) depmod_conf_text "${DKMS_DEST}" ;;
  esac
}
