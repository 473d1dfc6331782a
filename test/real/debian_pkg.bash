# shellcheck shell=bash
# Helpers of apt_debian.bats, ubuntu.bats and package.bats: the control file
# `build.sh package` writes, made by its own function (needs REPO_ROOT); a
# private apt state on a local package index; a dpkg status that apt's
# simulations can go on from.

# control_text TAG DIR: the control file build.sh package writes for TAG
# (status 3: TAG is not in versions.conf).
control_text() {
  # shellcheck source=build.sh
  source "${REPO_ROOT}/build.sh"
  versions_load
  [[ -n ${V_FAMILY[$1]:-} ]] || return 3
  deb_control "$1" "$2"
}

# apt_applied STATE SIM MANUAL DEB APT-OPTION...: STATE/status (dpkg's) and
# STATE/extended_states (apt's auto marks), the files APT-OPTION... name, as
# they are after the transaction that `apt-get -s` printed into SIM: its
# Remv packages gone, its Inst packages installed (their stanzas as
# apt-cache shows them; DEB's, a local .deb or "", from its control file),
# each marked automatically installed unless it is MANUAL (a package name),
# as apt marks what it brings in for another package. So a simulation can
# go on where the last one ended, without root or dpkg.
apt_applied() {
  local state=$1 sim=$2 manual=$3 deb=$4 own="" p f
  shift 4
  local -a gone=() new=() specs=()
  [[ -z ${deb} ]] || own=$(dpkg-deb -f "${deb}" Package)
  mapfile -t gone < <(sed -n -E 's/^Remv ([^ ]+) .*/\1/p' "${sim}")
  mapfile -t new < <(sed -n -E 's/^Inst ([^ ]+) (\[[^]]*\] )?\(([^ ]+) .*/\1=\3/p' "${sim}")
  # one pass over each file: out with the stanzas of what the transaction
  # removes or replaces
  for f in status extended_states; do
    awk -v names=" ${gone[*]} ${new[*]%%=*} " 'BEGIN { RS = ""; FS = "\n"; ORS = "\n\n" }
      { split($1, p, ": "); if (!index(names, " " p[2] " ")) print }' "${state}/${f}" >"${state}/${f}.new"
    mv "${state}/${f}.new" "${state}/${f}"
  done
  for p in "${new[@]}"; do
    if [[ ${p%%=*} == "${own}" ]]; then
      { dpkg-deb -f "${deb}" && printf 'Status: install ok installed\n\n'; } >>"${state}/status"
    else
      specs+=("${p}")
    fi
    [[ ${p%%=*} == "${manual}" ]] ||
      printf 'Package: %s\nArchitecture: amd64\nAuto-Installed: 1\n\n' "${p%%=*}" >>"${state}/extended_states"
  done
  [[ ${#specs[@]} -eq 0 ]] && return 0
  apt-cache "$@" show "${specs[@]}" | awk 'BEGIN { RS = ""; FS = "\n" }
    { split($1, p, ": "); if (seen[p[2]]++) next
      print $1; print "Status: install ok installed"
      for (i = 2; i <= NF; i++) if ($i !~ /^(Filename|Size|MD5sum|SHA256|SHA1|Description-md5):/) print $i
      print "" }' >>"${state}/status"
}

# apt_local DIR: a private apt state in DIR whose one source is the index
# DIR/repo/Packages; sets APT_OPTS (dpkg's status DIR/status and apt's marks
# DIR/extended_states, both empty; recommendations off unless a call says
# otherwise).
apt_local() {
  local a=$1
  mkdir -p "${a}/repo" "${a}/lists/partial" "${a}/cache/archives/partial" "${a}/prefs"
  : >"${a}/status"
  : >"${a}/extended_states"
  printf 'deb [trusted=yes] file:%s ./\n' "${a}/repo" >"${a}/sources.list"
  APT_OPTS=(-o "Dir::Etc::SourceList=${a}/sources.list" -o Dir::Etc::SourceParts=/dev/null
    -o "Dir::State::Lists=${a}/lists" -o "Dir::Cache=${a}/cache" -o "Dir::State::status=${a}/status"
    -o "Dir::State::extended_states=${a}/extended_states"
    -o Dir::Etc::Preferences=/dev/null -o "Dir::Etc::PreferencesParts=${a}/prefs"
    -o APT::Architecture=amd64 -o APT::Architectures::=amd64 -o APT::Sandbox::User=root
    -o APT::Install-Recommends=false)
  apt-get "${APT_OPTS[@]}" -q update >"${a}/update.log" 2>&1 || { cat "${a}/update.log" && return 1; }
}

# package_standin TAG OUT [REVISION [EDIT]]: nvidia-p2p-dkms_TAG-REVISION_amd64.deb
# (REVISION default 1) in OUT as `build.sh package` writes it (deb_tree:
# control file, maintainer scripts, the family's options in
# /usr/lib/modprobe.d/nvidia-p2p.conf, the install lines in
# /usr/lib/modprobe.d/nvidia-p2p-load.conf, the depmod override as
# conffile, dkms.conf),
# but for the DKMS source: dkms.conf alone, no kernel-open, no objects. On a
# machine without kernel headers its postinst's `dkms add` registers it and
# nothing is built; no driver build is needed to make it. EDIT, a function,
# is called with the package tree before it is built (build.sh's functions
# and variables at hand). Prints its path (status 3: TAG is not in
# versions.conf).
package_standin() {
  local tag=$1 out=$2 revision=${3:-1} edit=${4:-}
  (
    # shellcheck source=build.sh
    source "${REPO_ROOT}/build.sh"
    versions_load
    [[ -n ${V_FAMILY[${tag}]:-} ]] || exit 3
    P2P_WORK_DIR=$(mktemp -d)
    P2P_REVISION=${revision}
    mkdir -p "$(payload_dir "${tag}")"
    write_dkms_conf "${tag}" >"$(payload_dir "${tag}")/dkms.conf"
    deb_tree "${tag}" "${P2P_WORK_DIR}/deb"
    [[ -z ${edit} ]] || "${edit}" "${P2P_WORK_DIR}/deb"
    mkdir -p "${out}"
    dpkg-deb --root-owner-group -Zxz --build "${P2P_WORK_DIR}/deb" "${out}/$(deb_file "$(deb_version "${tag}")")" >/dev/null
    rm -rf -- "${P2P_WORK_DIR}"
    printf '%s\n' "${out}/$(deb_file "$(deb_version "${tag}")")"
  )
}

# package_standin_old_layout TAG OUT: nvidia-p2p-dkms_TAG-0_amd64.deb in OUT
# as packages were built before the options left the conffiles: the
# options in the conffile /etc/modprobe.d/nvidia-p2p.conf, no preinst or
# postrm, no rm_conffile in postinst (package_standin's tree, moved back).
package_standin_old_layout() {
  package_standin "$1" "$2" 0 old_layout
}

# old_layout DIR: package_standin's tree DIR moved back to the layout before
# the options left the conffiles. It runs in package_standin's subshell,
# where build.sh defines the PKG_ names.
old_layout() {
  # shellcheck disable=SC2031 # set by build.sh in this same subshell
  local d=$1 opts=${PKG_MODPROBE_OPTS} old=${PKG_OLD_CONFFILE}
  mkdir -p "${d}/etc/modprobe.d"
  mv "${d}/${opts}" "${d}${old}"
  printf '%s\n/etc/depmod.d/nvidia-p2p.conf\n' "${old}" >"${d}/DEBIAN/conffiles"
  rm -f "${d}/DEBIAN/preinst" "${d}/DEBIAN/postrm"
  sed -i '/dpkg-maintscript-helper/d' "${d}/DEBIAN/postinst"
  (cd "${d}" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z | xargs -0 md5sum) >"${d}/DEBIAN/md5sums"
}
