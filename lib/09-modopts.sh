# shellcheck shell=bash
# lib/09-modopts.sh: the files that make the modules load with P2P: the
# modprobe.d options of the family (registry keys, NVLink mode, static BAR1
# per GPU) and the depmod.d search order.

# The five modules of the driver, as modprobe names them.
readonly P2P_MODULES="nvidia nvidia-uvm nvidia-modeset nvidia-drm nvidia-peermem"

# The name of the packages `build.sh package` makes, in every format (the
# options file they ship names it).
readonly P2P_PKG_NAME="nvidia-p2p-dkms"

p2p_depmod_conf() { printf '%s/etc/depmod.d/%s.conf\n' "${P2P_ROOT}" "${P2P_NAME}"; }

p2p_modprobe_conf() { printf '%s/etc/modprobe.d/%s.conf\n' "${P2P_ROOT}" "${P2P_NAME}"; }

# write_depmod_conf SUBDIR: the override making depmod pick the modules in
# /lib/modules/<kver>/SUBDIR over any other copy of the same name.
write_depmod_conf() {
  local subdir=$1 conf
  conf=$(p2p_depmod_conf)
  txn_save "${conf}"
  if [[ ${P2P_DRY_RUN} -eq 1 ]]; then
    printf 'would write %s (override entries for %s in %s)\n' "${conf}" "${P2P_MODULES}" "${subdir}"
    return 0
  fi
  if [[ ! -d $(dirname "${conf}") ]]; then
    # Made here: uninstall removes it again (drop_created_dir).
    txn_save "$(created_dir_marker)"
    txn_mkdir "$(dirname "${conf}")"
    printf '%s\n' "$(dirname "${conf}")" >"$(created_dir_marker)"
  fi
  depmod_conf_text "${subdir}" >"${conf}"
}

# depmod_conf_text SUBDIR: the depmod.d text (also shipped by `package`).
depmod_conf_text() {
  local m
  printf '# Installed by %s: prefer the P2P modules over other copies.\n' "${P2P_NAME}"
  for m in ${P2P_MODULES}; do
    printf 'override %s * %s\n' "${m//-/_}" "$1"
  done
}

# write_modprobe_conf TAG: the family's module options (patches/<family>/modprobe.conf).
write_modprobe_conf() {
  local tag=$1 conf mode keep
  conf=$(p2p_modprobe_conf)
  mode=$(nvlink_mode "${tag}") || exit "$?"
  keep=$(nvlink_keep_setting "${tag}") || exit "$?"
  # p2p-0006's key (families 535-570): its one open risk, said once
  if [[ ${mode} == keep && ${keep%%=*} == RMBar1P2PKeepNvlink ]]; then
    warn "NVLink kept for bridged pairs (--nvlink keep, ${keep}): in family ${V_FAMILY[${tag}]} GSP firmware also gets RMForceP2PType=2, and whether it still sets up NVLink peers then is not known; if a bridged pair fails peer access (build.sh verify), reinstall with --nvlink off"
  fi
  txn_save "${conf}"
  if [[ ${P2P_DRY_RUN} -eq 1 ]]; then
    printf 'would write %s:\n' "${conf}"
    modprobe_conf_text "${tag}" | grep -v '^#' | sed 's/^/  /'
    return 0
  fi
  txn_mkdir "$(dirname "${conf}")"
  modprobe_conf_text "${tag}" >"${conf}"
}

# modprobe_conf_text TAG [--no-install [REGEN]|--container]: the options file's text, with the
# NVLink mode (nvlink_mode) applied to the options line, then the install
# lines (modprobe_install_lines). --no-install leaves them out (`package`
# ships the options in /usr/lib/modprobe.d/nvidia-p2p.conf and the install
# lines in a file of their own, neither a conffile: apt remove takes both
# away) and says how to change the package's options (REGEN: the command
# that rebuilds the initramfs, default update-initramfs -u); --container leaves
# them out too and says what the image's entrypoint does with the options.
modprobe_conf_text() {
  local tag=$1 src mode keep text
  src="$(family_dir "${tag}")/modprobe.conf"
  text=$(family_conf "${tag}") || exit "$?"
  mode=$(nvlink_mode "${tag}") || exit "$?"
  if [[ ${mode} == keep ]]; then
    keep=$(nvlink_keep_setting "${tag}") || exit "$?"
    text=$(options_with "${keep}" <<<"${text}") || die "${EX_DATA}" "${src}: its options line has no ${keep%%=*} for '# nvlink-keep: ${keep}'"
  fi
  printf '# Installed by %s for driver %s (family %s).\n' "${P2P_NAME}" "${tag}" "${V_FAMILY[${tag}]}"
  if [[ ${2:-} == --container ]]; then
    printf '# The image'"'"'s options: nvidia-driver init writes them, with the GPU\n'
    printf '# Operator'"'"'s kernelModuleConfig files on top, to\n'
    printf '# /etc/modprobe.d/nvidia-p2p.conf (docs/kubernetes.md, "Which options win").\n'
  elif [[ ${2:-} == --no-install ]]; then
    printf '# Shipped by the package %s, removed with it (not a conffile). To\n' "${P2P_PKG_NAME}"
    printf '# change the options (to switch P2P off without rebuilding: comment\n'
    printf '# out the options line(s)), copy this file to /etc/modprobe.d/ and edit\n'
    printf '# the copy: it overrides this file as a whole. It stays when the package\n'
    printf '# is removed: delete it first. Then %s and reboot; see\n' "${3:-update-initramfs -u}"
    printf '# docs/how-it-works.md, "Switching P2P off".\n'
  else
    printf '# Comment out the options line(s) and reboot to switch P2P off without\n'
    printf '# rebuilding: see docs/how-it-works.md, "Switching P2P off".\n'
  fi
  nvlink_note "${tag}" "${mode}"
  printf '%s\n' "${text}"
  static_bar1_lines "${tag}"
  [[ ${2:-} == --no-install || ${2:-} == --container ]] || modprobe_install_lines
}

# options_with KEY=VALUE: stdin with KEY's value in the NVreg_RegistryDwords
# of its "options nvidia" line set to VALUE (status 1: no such key there).
options_with() {
  local kv=$1 line out="" found=0 re
  re="([\";])${kv%%=*}=[^\";]*"
  while IFS= read -r line; do
    if [[ ${line} == "options nvidia "* && ${line} =~ ${re} ]]; then
      line=${line/"${BASH_REMATCH[0]}"/"${BASH_REMATCH[1]}${kv}"}
      found=1
    fi
    out+="${line}"$'\n'
  done
  [[ ${found} -eq 1 ]] || return 1
  printf '%s' "${out}"
}

# modprobe_install_lines: make `modprobe nvidia` (and the other four) load the
# modules of that name, ours. Debian's driver packages redirect it with
# 'install nvidia modprobe -i nvidia-current ...' (their renamed modules) in
# /etc/modprobe.d/nvidia.conf; modprobe takes a module's first 'install' line
# in its files' order, and nvidia-p2p.conf sorts before nvidia.conf (the
# package's /usr/lib/modprobe.d/nvidia-p2p-load.conf too: deb_tree).
modprobe_install_lines() {
  local m
  printf '\n# Load these modules, also where Debian'"'"'s driver packages would redirect\n'
  printf '# modprobe to their nvidia-current* modules (keep these lines).\n'
  local opts="\$CMDLINE_OPTS" # expanded by modprobe, not here
  for m in nvidia nvidia-modeset nvidia-drm nvidia-uvm nvidia-peermem; do
    printf 'install %s modprobe -i %s %s\n' "${m}" "${m}" "${opts}"
  done
}

# static_bar1_setting TAG: "KEY=VALUE" from the "# static-bar1-force:" line
# of TAG's family's modprobe.conf, or nothing.
static_bar1_setting() {
  family_setting "$1" static-bar1-force
}

# static_bar1_lines TAG: the modprobe.d lines for --force-static-bar1, or
# nothing without it.
static_bar1_lines() {
  local kv gpu per=""
  [[ -n ${P2P_STATIC_BAR1} ]] || return 0
  kv=$(static_bar1_setting "$1")
  for gpu in ${P2P_STATIC_BAR1//,/ }; do
    per+="${per:+;}pci=${gpu};${kv}"
  done
  printf '# Static BAR1 forced (--force-static-bar1) for the GPUs named below: %s\n' "${kv}"
  printf '# maps their client-visible VRAM even where BAR1 is no larger than VRAM\n'
  printf '# (docs/how-it-works.md, Mixed boxes). Remove the line and reboot to undo it.\n'
  printf 'options nvidia NVreg_RegistryDwordsPerDevice="%s"\n' "${per}"
}
