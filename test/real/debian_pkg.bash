# shellcheck shell=bash
# Helper of apt_debian.bats: the control file `build.sh package` writes,
# made by its own function. Needs REPO_ROOT.

# control_text TAG DIR: the control file build.sh package writes for TAG
# (status 3: TAG is not in versions.conf).
control_text() {
  # shellcheck source=build.sh
  source "${REPO_ROOT}/build.sh"
  versions_load
  [[ -n ${V_FAMILY[$1]:-} ]] || return 3
  deb_control "$1" "$2"
}
