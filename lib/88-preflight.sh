# shellcheck shell=bash
# lib/88-preflight.sh: the checks made before anything changes (the first
# step of `build.sh <tag>`) and the `preflight` command. They ask every stage
# below (kernel, DKMS, signing, userspace, doctor), so this file sits above
# them. How a failed check is reported (and kept going under --dry-run):
# lib/05-host.sh.

# preflight_pipeline TAG: everything `build.sh <tag>` needs, checked up front.
preflight_pipeline() {
  local tag=$1 problem
  stage preflight "tools, kernel headers, root, Secure Boot, userspace driver"
  doctor_works_now "${tag}" >&2
  while IFS= read -r problem; do
    preflight_fail "${EX_PREFLIGHT}" "${problem}"
  done < <(pipeline_problems)
  if ! is_root && command -v sudo >/dev/null 2>&1; then
    note "not root: fetch, patch and build run as $(id -un); the install step will use sudo"
  fi
  preflight_kernel
  sign_resolve
  preflight_secure_boot
  doctor_preinstall "${tag}" >&2
  userspace_preflight "${tag}"
}

# pipeline_problems: what the pipeline refuses before any work, a line per
# problem: a tool it needs missing, neither root nor sudo, dkms missing or
# too old (not with --no-dkms). The pipeline's preflight stops at the first
# (under --dry-run each is a PROBLEM line); the preflight command reports
# each as a fail line: one list, so that preflight never passes a machine
# the pipeline refuses.
pipeline_problems() {
  local tool
  for tool in git make gcc g++ quilt modinfo:kmod depmod:kmod tar; do
    command -v "${tool%%:*}" >/dev/null 2>&1 ||
      printf "'%s' is required but not installed (Debian package: %s)\n" "${tool%%:*}" "${tool#*:}"
  done
  if ! is_root && ! command -v sudo >/dev/null 2>&1; then
    printf 'the install step needs root: run as root (sudo is not installed)\n'
  fi
  [[ ${P2P_NO_DKMS} -eq 1 ]] || dkms_problem
}

# preflight_kernel: headers for the target kernel (resolve_kernel dies without
# them; under --dry-run the plan continues with the release alone).
preflight_kernel() {
  if [[ ${P2P_DRY_RUN} -eq 1 && -z ${P2P_KERNEL_SRC} ]]; then
    local kver=${P2P_KERNEL:-$(uname -r)}
    if ! have_kernel_headers "${kver}"; then
      preflight_fail "${EX_PREFLIGHT}" "no kernel headers for ${kver}; install them first: $(headers_package_hint "${kver}")"
      set_kernel_target "${kver}" "(missing)" "(missing)"
      return 0
    fi
  fi
  resolve_kernel
}

help_preflight() {
  usage_synopsis preflight
  cat <<'EOF'

Report what matters for P2P on this machine, changing nothing; first, when the
loaded driver already gives every GPU pair P2P (nvidia-smi topo -p2p r and w
OK, nothing found that stops it), that it does. Then what `build.sh <tag>`
refuses before any work, checked by the same code: the tools it needs (git,
make, gcc, g++, quilt, kmod, tar), root or sudo, and dkms (installed, new
enough; not with --no-dkms, as in the pipeline). Then kernel headers (of
--kernel KVER, default the running kernel), Secure Boot and signing, the
loaded driver and the userspace driver version; then, as "doctor:" lines, the
NVIDIA GPUs (BAR1, VRAM) and doctor's findings that would stop P2P after an
install (Resizable BAR, BAR1, IOMMU, ACS, nouveau, display, mixed models ...;
with <tag>, also the registry keys already in modprobe.d against that tag's
generation). Exit 0 when nothing blocks an install, 10 otherwise (doctor's
findings do not block it: see build.sh doctor).
EOF
}

cmd_preflight() {
  local tag="" kver problem fatal=0
  parse_stage_args preflight tag "$@"
  if [[ -n ${tag} ]]; then
    require_tag "${tag}"
  fi
  doctor_works_now "${tag}"
  while IFS= read -r problem; do
    report fail "${problem}"
    fatal=1
  done < <(pipeline_problems)
  kver=${P2P_KERNEL:-$(uname -r)}
  if have_kernel_headers "${kver}"; then
    report ok "kernel headers for ${kver}"
  else
    report fail "no kernel headers for ${kver}: $(headers_package_hint "${kver}")"
    fatal=1
  fi
  report_secure_boot || fatal=1
  report_versions || fatal=1
  if [[ -r ${P2P_SYSFS}/module/nvidia/version ]]; then
    report info "loaded nvidia module: $(cat "${P2P_SYSFS}/module/nvidia/version")"
  fi
  report info "userspace driver: $(userspace_summary)"
  doctor_preinstall "${tag}"
  [[ ${fatal} -eq 0 ]] || exit "${EX_PREFLIGHT}"
}

# report_secure_boot: Secure Boot's state and the key that would sign.
report_secure_boot() {
  local cert="${P2P_ROOT}${DKMS_MOK_CERT}"
  if ! secure_boot_enabled; then
    report ok "Secure Boot is off (or not detectable)"
    return 0
  fi
  [[ -n ${P2P_SIGN_CERT} ]] && cert=${P2P_SIGN_CERT}
  if [[ ! -e ${cert} ]] && ! command -v dkms >/dev/null 2>&1; then
    report fail "Secure Boot is enabled and no key would sign the modules: install dkms (it makes and uses its own key pair), or pass --sign-key/--sign-cert or --sign-generate to install"
    return 1
  fi
  if [[ ! -e ${cert} ]]; then
    report warn "Secure Boot is enabled: DKMS makes its key pair ${DKMS_MOK_CERT} at its first build; enroll it then (build.sh install says how)"
    return 0
  fi
  case $(sign_enrolled "${cert}") in
  yes) report ok "Secure Boot is enabled; the signing certificate ${cert} is enrolled" ;;
  no)
    report fail "Secure Boot is enabled and the signing certificate ${cert} is NOT enrolled: sudo mokutil --import ${cert#"${P2P_ROOT}"}, reboot, enroll it in MOK Manager"
    return 1
    ;;
  *) report warn "Secure Boot is enabled; whether ${cert} is enrolled cannot be told (mokutil --test-key)" ;;
  esac
}

# report_versions: the installed P2P modules' version (DKMS, --no-dkms or
# the nvidia-p2p-dkms package) against the userspace driver's.
report_versions() {
  local mods user
  mods=$(installed_module_tags | tr '\n' ' ')
  mods=${mods% }
  user=$(userspace_versions | tr '\n' ' ')
  user=${user% }
  [[ -n ${mods} ]] || return 0
  report info "nvidia-p2p modules installed: ${mods}"
  if [[ -n ${user} && ${user} != "${mods}" ]]; then
    report fail "userspace driver ${user} differs from the nvidia-p2p modules ${mods}: a \"Driver/library version mismatch\"; install NVIDIA's .run of ${mods%% *} with --no-kernel-modules (docs/packaging.md: Userspace next to the package)"
    return 1
  fi
  return 0
}
