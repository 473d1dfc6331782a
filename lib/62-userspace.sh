# shellcheck shell=bash
# lib/62-userspace.sh: the userspace driver. Runs NVIDIA's .run installer with
# --no-kernel-modules (the kernel modules are ours) and makes sure the
# userspace libraries end up at exactly the module's version: a
# "Driver/library version mismatch" must not be left behind.

# install_userspace TAG RUN: run the verified installer.
install_userspace() {
  local tag=$1 runfile=$2 expected
  stage userspace "$(basename "${runfile}") --silent --no-kernel-modules"
  if [[ ${P2P_DRY_RUN} -eq 0 ]]; then
    # Checked again right before it runs: it may have been verified minutes ago.
    expected=$(run_expected_sha "${tag}")
    verify_run_file "${tag}" "${runfile}" "${expected}"
  fi
  P2P_USERSPACE_TOUCHED="$(basename "${runfile}") (its log: /var/log/nvidia-installer.log)"
  log_line "userspace installer starting: ${P2P_USERSPACE_TOUCHED}"
  run_logged sh "${runfile}" --silent --no-kernel-modules ||
    die "${EX_INSTALL}" "the userspace installer $(basename "${runfile}") failed; see /var/log/nvidia-installer.log"
}

# userspace_versions: the versions of the installed NVIDIA userspace driver, one
# per line, from the versioned names of libnvidia-ml and libcuda; also in the
# flavour directories of Debian's packages (nvidia/current, nvidia/tesla-535:
# their alternatives link the unversioned names there).
userspace_versions() {
  local d f
  for d in "${P2P_ROOT}"/{usr/lib/x86_64-linux-gnu,usr/lib/x86_64-linux-gnu/nvidia/*,usr/lib64,usr/lib,lib/x86_64-linux-gnu,lib64}; do
    for f in "${d}"/libnvidia-ml.so.[0-9]*.* "${d}"/libcuda.so.[0-9]*.*; do
      [[ -e ${f} ]] || continue
      f=${f##*/}
      printf '%s\n' "${f#*.so.}"
    done
  done | sort -u
}

# require_userspace_version TAG PREFIX: exactly TAG is installed, or EX_MISMATCH
# (under --dry-run a reported problem).
require_userspace_version() {
  local tag=$1 prefix=$2 found
  found=$(userspace_versions | tr '\n' ' ')
  found=${found% }
  if [[ ${found} != "${tag}" ]]; then
    preflight_fail "${EX_MISMATCH}" "${prefix}userspace driver version is '${found:-none}', modules are ${tag}; that would be a \"Driver/library version mismatch\" (install the matching .run: --userspace run)"
  fi
}

# packaged_userspace: "PACKAGE VERSION" per package (dpkg or rpm) that owns
# the NVIDIA userspace libraries, VERSION the upstream part ("535.261.03-1",
# "550.120-0ubuntu0.24.04.1" -> 535.261.03, 550.120); nothing when none does.
packaged_userspace() {
  local pkg ver
  if command -v dpkg-query >/dev/null 2>&1; then
    { dpkg-query -S 'libnvidia-ml.so.1' 'libcuda.so.1' 2>/dev/null || true; } | sed 's/: .*//' | tr ',' '\n' |
      sed 's/^ *//; s/:.*//' | sort -u | while read -r pkg; do
      [[ -n ${pkg} ]] || continue
      ver=$(dpkg-query -W -f '${Version}\n' "${pkg}" 2>/dev/null | head -n 1) || ver=""
      ver=${ver#*:}
      printf '%s %s\n' "${pkg}" "${ver%%-*}"
    done
  elif command -v rpm >/dev/null 2>&1; then
    { rpm -qf --qf '%{NAME} %{VERSION}\n' /usr/lib64/libnvidia-ml.so.1 /usr/lib64/libcuda.so.1 2>/dev/null || true; } |
      grep -v 'not owned' | sort -u
  fi
}

# packaged_names: the names of the packages packaged_userspace lists, on one
# line (nothing when none).
packaged_names() {
  local names
  names=$(packaged_userspace | cut -d' ' -f1 | tr '\n' ' ')
  printf '%s' "${names% }"
}

# userspace_summary: the installed userspace versions and who is in charge of
# them (packages, or none: NVIDIA's .run), one line.
userspace_summary() {
  local versions pkgs
  versions=$(userspace_versions | tr '\n' ' ')
  versions=${versions% }
  pkgs=$(packaged_userspace | tr '\n' ',' | sed 's/,$//; s/,/, /g')
  if [[ -n ${pkgs} ]]; then
    printf '%s (packages: %s; build.sh install keeps them when they are the tag)\n' "${versions:-none found}" "${pkgs}"
  elif [[ -n ${versions} ]]; then
    printf '%s (no package owns it: NVIDIA'"'"'s .run)\n' "${versions}"
  else
    printf 'none\n'
  fi
}

# uninstall_userspace_note: what uninstall leaves of the userspace driver,
# and how to go on from there.
uninstall_userspace_note() {
  local names
  names=$(packaged_names)
  if [[ -n ${names} ]]; then
    note "the userspace driver of the packages ${names} stays installed; their distribution's kernel module package gives the stock driver back (Debian: sudo apt-get install nvidia-kernel-dkms)"
  elif [[ -n "$(userspace_versions)" ]]; then
    note "the userspace driver from the .run stays installed (sudo nvidia-uninstall removes it; another .run with --no-kernel-modules replaces it)"
  fi
}

# remove_packages_cmd PKG...: the command that removes them here.
remove_packages_cmd() {
  if command -v dpkg-query >/dev/null 2>&1; then
    printf 'sudo apt-get purge %s' "$*"
  else
    printf 'sudo dnf remove %s' "$*"
  fi
}

# userspace_resolve TAG: decide who provides the userspace driver
# (P2P_USERSPACE: auto, keep or run) before anything changes, and set
# P2P_NO_USERSPACE (1: keep what is installed) and P2P_USERSPACE_WHY.
#   keep  the installed userspace (packaged or an earlier .run) must be TAG,
#         and its GSP firmware must be there
#   run   NVIDIA's .run of TAG; packages owning the libraries are refused
#         (the .run would fight with them, and theirs would survive in other
#         library directories: a version mismatch)
#   auto  keep when packages own the userspace (same version, else refused
#         with the commands that fix it), run when none do
# Status 1 when it refused (only --dry-run gets that far).
userspace_resolve() {
  local tag=$1 pkgs names versions
  pkgs=$(packaged_userspace)
  names=$(cut -d' ' -f1 <<<"${pkgs}" | tr '\n' ' ')
  names=${names% }
  versions=$(cut -d' ' -f2 <<<"${pkgs}" | sort -u | tr '\n' ' ')
  versions=${versions% }
  case ${P2P_USERSPACE} in
  keep)
    P2P_NO_USERSPACE=1
    versions=$(userspace_versions | tr '\n' ' ')
    versions=${versions% }
    if userspace_unstaged; then
      P2P_USERSPACE_WHY="none in ${P2P_ROOT} (staging with --root): left out, not checked; the system that uses ${P2P_ROOT} needs the userspace driver of ${tag} and its GSP firmware (/lib/firmware/nvidia/${tag}/gsp_*.bin) beside these modules"
    else
      P2P_USERSPACE_WHY="kept: ${pkgs:+packages ${names} }${versions:-none installed}"
    fi
    ;;
  run)
    [[ -z ${names} ]] || preflight_fail "${EX_PREFLIGHT}" "--userspace run, but the NVIDIA userspace driver is installed by packages (${names}): the .run would fight with them; keep them (--userspace keep, when they are ${tag}) or remove them first: $(remove_packages_cmd "${names}")"
    P2P_NO_USERSPACE=0
    P2P_USERSPACE_WHY="NVIDIA's .run of ${tag}"
    ;;
  auto)
    if [[ -z ${names} ]]; then
      P2P_NO_USERSPACE=0
      P2P_USERSPACE_WHY="NVIDIA's .run of ${tag} (no package owns the NVIDIA libraries)"
    elif [[ ${versions} == "${tag}" ]]; then
      P2P_NO_USERSPACE=1
      P2P_USERSPACE_WHY="kept: packages ${names} (${tag})"
    else
      preflight_fail "${EX_MISMATCH}" "the NVIDIA userspace driver is installed by packages (${names}) of version ${versions}, not ${tag}: the modules would not match it (\"Driver/library version mismatch\"). $(userspace_fix_hint "${tag}" "${versions}" "${names}")"
      # --dry-run goes on: planned as kept (no .run to fetch), reported above
      P2P_NO_USERSPACE=1
      P2P_USERSPACE_WHY="packages ${names} (${versions}), not ${tag}"
      return 1
    fi
    ;;
  *) die "${EX_USAGE}" "--userspace takes auto, keep or run, not '${P2P_USERSPACE}'" ;;
  esac
}

# userspace_preflight TAG: who provides the userspace (userspace_resolve),
# then a kept one's checks: it must be TAG, with TAG's GSP firmware.
userspace_preflight() {
  local tag=$1
  if ! userspace_resolve "${tag}"; then
    :
  elif [[ ${P2P_NO_USERSPACE} -eq 1 ]] && ! userspace_unstaged; then
    require_userspace_version "${tag}" "keeping the installed userspace driver: "
    require_gsp_firmware "${tag}"
  fi
  note "userspace driver: ${P2P_USERSPACE_WHY}"
}

# userspace_unstaged: a staging install (--root DIR) that keeps the userspace
# (--no-userspace, --userspace keep) where DIR holds none at all: the help's
# recipe for staging. NVIDIA's .run cannot install into DIR, so the modules are
# staged alone; the version checks have nothing to compare and are left out
# (said, never passed). A userspace of another version in DIR is still a
# mismatch (exit 12).
userspace_unstaged() {
  [[ -n ${P2P_ROOT} && ${P2P_USERSPACE} == keep && -z $(userspace_versions) ]]
}

# userspace_fix_hint TAG VERSIONS NAMES: the commands that end a mismatch.
userspace_fix_hint() {
  local tag=$1 versions=$2 names=$3 hint=""
  if [[ ${versions} != *" "* && -n ${V_FAMILY[${versions}]:-} ]]; then
    hint="Install their version instead: build.sh install ${versions}; or "
  else
    hint="Either "
  fi
  printf '%sreplace them with NVIDIA'"'"'s .run of %s: %s, then build.sh install %s --userspace run' \
    "${hint}" "${tag}" "$(remove_packages_cmd "${names}")" "${tag}"
}

# require_gsp_firmware TAG: the open modules cannot start a GPU without GSP
# firmware of exactly their version (/lib/firmware/nvidia/TAG/gsp_*.bin: the
# .run puts it there, Debian's firmware-nvidia-gsp (virtual
# firmware-nvidia-gsp-<version>) and Ubuntu's nvidia-firmware-<branch>-<version>
# or, for the -server driver, nvidia-firmware-<branch>-server-<version> too).
require_gsp_firmware() {
  local tag=$1 d f
  for d in lib/firmware usr/lib/firmware; do
    for f in "${P2P_ROOT}/${d}/nvidia/${tag}"/gsp_*.bin; do
      [[ -f ${f} ]] && return 0
    done
  done
  preflight_fail "${EX_PREFLIGHT}" "no GSP firmware of ${tag} in /lib/firmware/nvidia/${tag}: the open modules cannot start the GPU without it. Install it: Debian: sudo apt-get install firmware-nvidia-gsp-${tag}; Ubuntu: sudo apt-get install nvidia-firmware-${tag%%.*}-${tag} (nvidia-firmware-${tag%%.*}-server-${tag} beside the -server driver); or use NVIDIA's .run of ${tag} (--userspace run)"
}
