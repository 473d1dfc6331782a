#!/usr/bin/env bash
# qemu-smoke.sh: module-load smoke test for the built nvidia.ko.
#
# Boots a Debian kernel image under QEMU (TCG, no KVM) with a small busybox
# initramfs, loads the dependencies of the nvidia modules and then nvidia.ko.
# Without an NVIDIA GPU the driver's init prints "NVRM: No NVIDIA GPU found."
# and fails with ENODEV. Seeing both proves that the module passed the
# kernel's format, vermagic, modversions and symbol checks and that its
# module_init ran. Run with --help for usage.

set -euo pipefail

readonly PROG="qemu-smoke"
readonly EX_OK=0
readonly EX_FAIL=1
readonly EX_USAGE=2
readonly EX_SKIP=77
readonly GPU_LINE="NVRM: No NVIDIA GPU found."
readonly DEFAULT_TIMEOUT=180
# Load order of the modules other than nvidia.ko, when present in --modules.
readonly EXTRA_MODULES=(nvidia-modeset nvidia-uvm nvidia-drm nvidia-peermem)

OPT_RELEASE=""
OPT_MODULES=""
OPT_IMAGE_DEB=""
OPT_BUSYBOX_DEB=""
OPT_WORK_DIR=""
OPT_TIMEOUT="${DEFAULT_TIMEOUT}"
OPT_KEEP=0
OPT_EXPECT_FAIL=0
OPT_SIG_ENFORCE=0
readonly SIG_REJECT_RE='Loading of (unsigned module|module with unavailable key|module with unsupported crypto) is rejected'

WORK_DIR=""
WORK_DIR_IS_TEMP=0
FETCHED_DEB=""
DEP_FILES=()

usage() {
  cat <<EOF
Usage: ci/heavy/qemu-smoke.sh --kernel-release RELEASE --modules DIR [options]

Boot the Debian kernel RELEASE under qemu-system-x86_64 (TCG, no KVM) with a
busybox initramfs and insmod DIR/nvidia.ko. With no NVIDIA GPU present the
test passes only if the console shows "${GPU_LINE}" and insmod
fails with ENODEV (rc 19): that means the module loaded and its init ran.

Required:
  --kernel-release RELEASE  kernel to boot, e.g. 6.1.0-56-amd64 or
                            6.12.117+deb12-amd64 (package linux-image-RELEASE)
  --modules DIR             directory holding nvidia.ko; nvidia-modeset.ko,
                            nvidia-uvm.ko, nvidia-drm.ko and nvidia-peermem.ko
                            are included too when present

Options:
  --image-deb FILE    use this linux-image .deb instead of downloading
                      linux-image-RELEASE with apt-get download
  --busybox-deb FILE  use this busybox-static .deb instead of downloading it
  --work-dir DIR      work here (default: a temporary directory, removed at
                      exit). DIR gets debs/ (the downloaded packages),
                      console.log, and image-root/, busybox-root/,
                      initramfs/ and initrd.img, which are removed at exit
                      unless --keep is given. Packages are downloaded anew
                      on every run.
  --timeout SEC       wall-clock limit for the QEMU run (default: ${DEFAULT_TIMEOUT})
  --keep              keep the work directory and everything in it
  --expect-fail       negative control: skip the vermagic pre-check and pass
                      only if insmod of nvidia.ko fails (rc != 0) and its init
                      did not run (no "${GPU_LINE}")
  --sig-enforce       boot with module.sig_enforce=1 (what Secure Boot's
                      lockdown enforces) and pass only if Debian's signed
                      dependencies load and nvidia.ko, signed by no key the
                      kernel trusts, is refused with EKEYREJECTED ("Key was
                      rejected by service") and the kernel's "Loading of
                      unsigned module is rejected" (or "... module with
                      unavailable key ...": signed, key not enrolled)
  -h, --help          show this help

Before booting, "modinfo -F vermagic" of nvidia.ko must start with RELEASE
(not checked with --expect-fail). Downloads use apt-get download, which checks
each .deb against the hashes in apt's signed index; nothing is installed.

Output: one line on stdout, "${PROG}: PASS ..." or "${PROG}: FAIL <reason>";
progress and diagnostics go to stderr.

Exit status: ${EX_OK} pass, ${EX_FAIL} fail, ${EX_USAGE} usage error, ${EX_SKIP} a prerequisite is missing
(a tool, or the packages could not be downloaded); the reason is on stderr.
EOF
}

die() {
  local status="$1"
  shift
  printf '%s: %s\n' "${PROG}" "$*" >&2
  exit "${status}"
}

info() {
  printf '%s: %s\n' "${PROG}" "$*" >&2
}

usage_error() {
  die "${EX_USAGE}" "$* (see --help)"
}

# Print the result line on stdout and exit 1.
result_fail() {
  printf '%s: FAIL %s\n' "${PROG}" "$*"
  exit "${EX_FAIL}"
}

need_value() {
  local option="$1" count="$2"
  if ((count < 2)); then
    usage_error "option ${option} needs a value"
  fi
}

parse_args() {
  while (($# > 0)); do
    case "$1" in
    --kernel-release | --modules | --image-deb | --busybox-deb | --work-dir | --timeout)
      need_value "$1" "$#"
      set_option "$1" "$2"
      shift 2
      ;;
    --kernel-release=* | --modules=* | --image-deb=* | --busybox-deb=* | --work-dir=* | --timeout=*)
      set_option "${1%%=*}" "${1#*=}"
      shift
      ;;
    --keep)
      OPT_KEEP=1
      shift
      ;;
    --expect-fail)
      OPT_EXPECT_FAIL=1
      shift
      ;;
    --sig-enforce)
      OPT_SIG_ENFORCE=1
      shift
      ;;
    -h | --help)
      usage
      exit "${EX_OK}"
      ;;
    *)
      usage_error "unknown argument: $1"
      ;;
    esac
  done
  validate_args
}

set_option() {
  local option="$1" value="$2"
  case "${option}" in
  --kernel-release) OPT_RELEASE="${value}" ;;
  --modules) OPT_MODULES="${value}" ;;
  --image-deb) OPT_IMAGE_DEB="${value}" ;;
  --busybox-deb) OPT_BUSYBOX_DEB="${value}" ;;
  --work-dir) OPT_WORK_DIR="${value}" ;;
  --timeout) OPT_TIMEOUT="${value}" ;;
  esac
}

validate_args() {
  [[ -n "${OPT_RELEASE}" ]] || usage_error "--kernel-release is required"
  [[ -n "${OPT_MODULES}" ]] || usage_error "--modules is required"
  if [[ ! "${OPT_RELEASE}" =~ ^[A-Za-z0-9][A-Za-z0-9.+_-]*$ ]]; then
    usage_error "--kernel-release '${OPT_RELEASE}' is not a kernel release name"
  fi
  if [[ ! "${OPT_TIMEOUT}" =~ ^[1-9][0-9]*$ ]]; then
    usage_error "--timeout must be a positive number of seconds, not '${OPT_TIMEOUT}'"
  fi
  [[ -d "${OPT_MODULES}" ]] || usage_error "--modules ${OPT_MODULES} is not a directory"
  [[ -f "${OPT_MODULES}/nvidia.ko" ]] || usage_error "no nvidia.ko in --modules ${OPT_MODULES}"
  if [[ -n "${OPT_IMAGE_DEB}" && ! -f "${OPT_IMAGE_DEB}" ]]; then
    usage_error "--image-deb ${OPT_IMAGE_DEB} does not exist"
  fi
  if [[ -n "${OPT_BUSYBOX_DEB}" && ! -f "${OPT_BUSYBOX_DEB}" ]]; then
    usage_error "--busybox-deb ${OPT_BUSYBOX_DEB} does not exist"
  fi
  return 0
}

require_tools() {
  local tool missing=()
  local tools=(qemu-system-x86_64 cpio dpkg-deb depmod modprobe modinfo timeout)
  if [[ -z "${OPT_IMAGE_DEB}" || -z "${OPT_BUSYBOX_DEB}" ]]; then
    tools+=(apt-get apt-cache)
  fi
  for tool in "${tools[@]}"; do
    command -v "${tool}" >/dev/null 2>&1 || missing+=("${tool}")
  done
  if ((${#missing[@]} > 0)); then
    die "${EX_SKIP}" "missing prerequisite: ${missing[*]} (Debian packages: qemu-system-x86 cpio dpkg kmod coreutils apt)"
  fi
}

# The kernel checks the release in vermagic only loosely (not at all with
# modversions), so check it here to give a clear message early.
check_vermagic() {
  local ko="${OPT_MODULES}/nvidia.ko" vermagic
  vermagic="$(modinfo -F vermagic "${ko}")" || result_fail "modinfo cannot read ${ko}"
  if [[ "${vermagic}" != "${OPT_RELEASE}" && "${vermagic}" != "${OPT_RELEASE} "* ]]; then
    result_fail "nvidia.ko was built for another kernel: vermagic '${vermagic% }' does not start with ${OPT_RELEASE}"
  fi
}

setup_work_dir() {
  if [[ -n "${OPT_WORK_DIR}" ]]; then
    mkdir -p "${OPT_WORK_DIR}"
    WORK_DIR="$(cd "${OPT_WORK_DIR}" && pwd)"
  else
    WORK_DIR="$(mktemp -d "${TMPDIR:-/tmp}/qemu-smoke.XXXXXX")"
    WORK_DIR_IS_TEMP=1
  fi
  trap cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
}

cleanup() {
  [[ -n "${WORK_DIR}" && -d "${WORK_DIR}" ]] || return 0
  if ((OPT_KEEP)); then
    info "kept work directory ${WORK_DIR}"
  elif ((WORK_DIR_IS_TEMP)); then
    rm -rf -- "${WORK_DIR}"
  else
    # A caller-provided directory keeps debs/ and console.log.
    rm -rf -- "${WORK_DIR}/image-root" "${WORK_DIR}/busybox-root" "${WORK_DIR}/initramfs" "${WORK_DIR}/initrd.img"
  fi
}

# Download the candidate version of PACKAGE into WORK_DIR/debs and set
# FETCHED_DEB. apt-get download checks what it fetches against the size and
# SHA256 in apt's index, which is verified through the signed InRelease
# file, so no separate checksum step is needed here. But apt 2.6 keeps an
# existing file of the right size without checking its hash, so a file
# left from an earlier run is removed first.
fetch_deb() {
  local package="$1" version arch dir="${WORK_DIR}/debs"
  if ! version="$(apt-cache show --no-all-versions "${package}" 2>/dev/null | sed -n 's/^Version: //p' | head -n 1)" ||
    [[ -z "${version}" ]]; then
    die "${EX_SKIP}" "apt knows no package ${package} (run apt-get update, or check --kernel-release)"
  fi
  arch="$(apt-cache show --no-all-versions "${package}" | sed -n 's/^Architecture: //p' | head -n 1)"
  # apt-get writes the epoch colon as %3a in the file name.
  FETCHED_DEB="${dir}/${package}_${version//:/%3a}_${arch}.deb"
  mkdir -p "${dir}"
  rm -f -- "${FETCHED_DEB}"
  info "apt-get download ${package} (${version})"
  if ! (cd "${dir}" && apt-get download -qq "${package}") >&2; then
    die "${EX_SKIP}" "apt-get download ${package} failed (offline?)"
  fi
  [[ -f "${FETCHED_DEB}" ]] || die "${EX_SKIP}" "apt-get download ${package} did not produce ${FETCHED_DEB}"
}

extract_debs() {
  local image_deb="${OPT_IMAGE_DEB}" busybox_deb="${OPT_BUSYBOX_DEB}"
  if [[ -z "${image_deb}" ]]; then
    fetch_deb "linux-image-${OPT_RELEASE}"
    image_deb="${FETCHED_DEB}"
  fi
  if [[ -z "${busybox_deb}" ]]; then
    fetch_deb busybox-static
    busybox_deb="${FETCHED_DEB}"
  fi
  rm -rf -- "${WORK_DIR}/image-root" "${WORK_DIR}/busybox-root"
  mkdir -p "${WORK_DIR}/image-root" "${WORK_DIR}/busybox-root"
  dpkg-deb -x "${image_deb}" "${WORK_DIR}/image-root"
  dpkg-deb -x "${busybox_deb}" "${WORK_DIR}/busybox-root"
  link_usr_modules "${WORK_DIR}/image-root"
  [[ -f "${WORK_DIR}/image-root/boot/vmlinuz-${OPT_RELEASE}" ]] ||
    usage_error "${image_deb} has no boot/vmlinuz-${OPT_RELEASE}"
  [[ -d "$(modules_dir)" ]] || usage_error "${image_deb} has no lib/modules/${OPT_RELEASE}"
  [[ -x "${WORK_DIR}/busybox-root/bin/busybox" ]] || usage_error "${busybox_deb} has no bin/busybox"
}

# Images built for a merged /usr ship usr/lib/modules; depmod -b wants lib/.
link_usr_modules() {
  local root="$1"
  if [[ ! -e "${root}/lib" && -d "${root}/usr/lib/modules" ]]; then
    ln -s usr/lib "${root}/lib"
  fi
}

modules_dir() {
  printf '%s\n' "${WORK_DIR}/image-root/lib/modules/${OPT_RELEASE}"
}

# The nvidia modules to include: nvidia first, then the others present.
nvidia_module_names() {
  local name
  printf '%s\n' nvidia
  for name in "${EXTRA_MODULES[@]}"; do
    if [[ -f "${OPT_MODULES}/${name}.ko" ]]; then
      printf '%s\n' "${name}"
    fi
  done
}

# Install the nvidia modules into the image tree under updates/, run depmod
# and collect their dependencies (in load order) from the image's modules.
resolve_deps() {
  local root="${WORK_DIR}/image-root" moddir name line path depends names=()
  local -A seen=()
  moddir="$(modules_dir)"
  mkdir -p "${moddir}/updates"
  mapfile -t names < <(nvidia_module_names)
  for name in "${names[@]}"; do
    cp -- "${OPT_MODULES}/${name}.ko" "${moddir}/updates/"
  done
  # -C /dev/null: ignore the host's depmod.d/modprobe.d configuration.
  # (No -e -F: Debian's System.map is a placeholder.)
  depmod -C /dev/null -b "${root}" "${OPT_RELEASE}"
  DEP_FILES=()
  for name in "${names[@]}"; do
    if ! depends="$(modprobe -C /dev/null -d "${root}" -S "${OPT_RELEASE}" --show-depends "${name}")"; then
      result_fail "modprobe --show-depends ${name} failed against the ${OPT_RELEASE} image"
    fi
    while IFS= read -r line; do
      [[ "${line}" == insmod\ * ]] || continue
      path="${line#insmod }"
      path="${path%% *}"
      [[ "${path}" != "${moddir}/updates/"* ]] || continue
      [[ -z "${seen[${path}]:-}" ]] || continue
      seen["${path}"]=1
      DEP_FILES+=("${path}")
    done <<<"${depends}"
  done
  info "dependencies: $(dep_names)"
}

module_name_of() {
  local base="${1##*/}"
  printf '%s\n' "${base%%.ko*}"
}

dep_names() {
  local path names=()
  for path in "${DEP_FILES[@]}"; do
    names+=("$(module_name_of "${path}")")
  done
  printf '%s\n' "${names[*]:-none}"
}

# Copy a module into the initramfs, decompressing .ko.xz/.ko.zst/.ko.gz.
copy_module() {
  local src="$1" dest="$2"
  case "${src}" in
  *.ko) cp -- "${src}" "${dest}" ;;
  *.ko.xz) need_tool xz && xz -dc -- "${src}" >"${dest}" ;;
  *.ko.zst) need_tool zstd && zstd -q -dc -- "${src}" >"${dest}" ;;
  *.ko.gz) need_tool gzip && gzip -dc -- "${src}" >"${dest}" ;;
  *) result_fail "unsupported module file ${src}" ;;
  esac
}

need_tool() {
  command -v "$1" >/dev/null 2>&1 || die "${EX_SKIP}" "missing prerequisite: $1 (to decompress the image's modules)"
}

build_initramfs() {
  local stage="${WORK_DIR}/initramfs" path name index=0
  rm -rf -- "${stage}"
  mkdir -p "${stage}/bin" "${stage}/dev" "${stage}/proc" "${stage}/sys" "${stage}/tmp" \
    "${stage}/smoke/deps" "${stage}/smoke/nvidia"
  cp -- "${WORK_DIR}/busybox-root/bin/busybox" "${stage}/bin/busybox"
  ln -s busybox "${stage}/bin/sh"
  : >"${stage}/smoke/deps.list"
  for path in "${DEP_FILES[@]}"; do
    index=$((index + 1))
    name="$(module_name_of "${path}")"
    copy_module "${path}" "${stage}/smoke/deps/$(printf '%02d' "${index}")-${name}.ko"
    printf '%s /smoke/deps/%02d-%s.ko\n' "${name}" "${index}" "${name}" >>"${stage}/smoke/deps.list"
  done
  while IFS= read -r name; do
    cp -- "${OPT_MODULES}/${name}.ko" "${stage}/smoke/nvidia/"
  done < <(nvidia_module_names)
  write_init "${stage}/init"
  # Uncompressed: unpacking a gzip initramfs under TCG costs the guest
  # several seconds with the ~90 MB of unstripped nvidia modules.
  (cd "${stage}" && find . -print0 | LC_ALL=C sort -z |
    cpio --null --create --format=newc --owner=0:0 --quiet) >"${WORK_DIR}/initrd.img"
}

# The guest's /init. Lines starting with "SMOKE " are parsed by smoke_verdict.
write_init() {
  cat >"$1" <<'EOF'
#!/bin/sh
# Generated by ci/heavy/qemu-smoke.sh.
PATH=/bin
export PATH
/bin/busybox mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
echo "SMOKE init start release=$(uname -r)"
while read -r name file; do
  insmod "${file}"
  echo "SMOKE insmod dep ${name} rc=$?"
done </smoke/deps.list
dmesg -c >/dev/null
insmod /smoke/nvidia/nvidia.ko
rc=$?
echo "SMOKE insmod nvidia rc=${rc}"
# Quiet the console: the other modules cannot load without nvidia and
# each prints hundreds of "Unknown symbol" lines.
echo 1 >/proc/sys/kernel/printk
dmesg -c | head -n 60 | sed 's/^/SMOKE dmesg nvidia: /'
for name in nvidia-modeset nvidia-uvm nvidia-drm nvidia-peermem; do
  [ -f "/smoke/nvidia/${name}.ko" ] || continue
  insmod "/smoke/nvidia/${name}.ko" 2>/dev/null
  echo "SMOKE insmod extra ${name} rc=$?"
  dmesg -c | head -n 3 | sed "s/^/SMOKE dmesg ${name}: /"
done
echo "SMOKE tainted=$(cat /proc/sys/kernel/tainted)"
sed 's/^/SMOKE loaded: /' /proc/modules
echo "SMOKE done"
poweroff -f
EOF
  chmod 0755 "$1"
}

# Run QEMU; print its exit status (124 when timeout stopped it).
boot_qemu() {
  local log="$1" rc=0 append="console=ttyS0 loglevel=6 panic=-1"
  ((OPT_SIG_ENFORCE)) && append+=" module.sig_enforce=1"
  timeout --foreground --kill-after=10 "${OPT_TIMEOUT}" \
    qemu-system-x86_64 -accel tcg -cpu max -smp 2 -m 2048 \
    -nographic -no-reboot -nic none \
    -kernel "${WORK_DIR}/image-root/boot/vmlinuz-${OPT_RELEASE}" \
    -initrd "${WORK_DIR}/initrd.img" \
    -append "${append}" \
    </dev/null >"${log}" 2>&1 || rc=$?
  printf '%s\n' "${rc}"
}

errno_name() {
  case "$1" in
  0) echo "success" ;;
  1) echo "EPERM" ;;
  2) echo "ENOENT, unknown symbol or parameter" ;;
  3) echo "ESRCH, unknown symbol" ;;
  8) echo "ENOEXEC, invalid module format" ;;
  12) echo "ENOMEM" ;;
  14) echo "EFAULT" ;;
  16) echo "EBUSY" ;;
  17) echo "EEXIST, already loaded" ;;
  19) echo "ENODEV" ;;
  22) echo "EINVAL" ;;
  61) echo "ENODATA" ;;
  126) echo "ENOKEY, key not available" ;;
  127) echo "EKEYEXPIRED" ;;
  129) echo "EKEYREJECTED, signature rejected" ;;
  *)
    if (($1 > 128)); then
      echo "insmod killed by signal $(($1 - 128))"
    else
      echo "errno $1"
    fi
    ;;
  esac
}

# First line of TEXT matching the extended regex PATTERN, without the
# "[    1.234567] " timestamp; empty if none.
first_match() {
  local text="$1" pattern="$2"
  grep -a -m 1 -E -- "${pattern}" <<<"${text}" | sed -E 's/^.*\[ *[0-9]+\.[0-9]+\] //' || true
}

# Decide from a console log. Prints "PASS <text>" or "FAIL <reason>" on
# stdout; returns 0 for PASS, 1 for FAIL.
#   smoke_verdict LOGFILE [expect-pass|expect-fail|expect-rejected] [RELEASE]
# expect-rejected: booted with module.sig_enforce=1, nvidia.ko must be
# refused for its signature (EKEYREJECTED and the kernel's reason).
# RELEASE, when given, must match the release the guest reported.
smoke_verdict() {
  local logfile="$1" mode="${2:-expect-pass}" want_release="${3:-}"
  local log line release rc gpu=0 symbols count
  local -x LC_ALL=C
  if [[ "${mode}" != expect-pass && "${mode}" != expect-fail && "${mode}" != expect-rejected ]]; then
    echo "FAIL smoke_verdict: unknown mode '${mode}'"
    return 1
  fi
  if [[ ! -s "${logfile}" ]]; then
    echo "FAIL console log ${logfile} is missing or empty"
    return 1
  fi
  log="$(tr -d '\r' <"${logfile}")"
  line="$(first_match "${log}" 'Kernel panic - not syncing')"
  if [[ -n "${line}" ]]; then
    echo "FAIL kernel panic: ${line#*Kernel panic - not syncing: }"
    return 1
  fi
  line="$(first_match "${log}" 'BUG: |Oops: |general protection fault|kernel BUG at')"
  if [[ -n "${line}" ]]; then
    echo "FAIL kernel oops: ${line}"
    return 1
  fi
  release="$(sed -n 's/^SMOKE init start release=\([^ ]*\)$/\1/p' <<<"${log}" | head -n 1)"
  if [[ -z "${release}" ]]; then
    echo "FAIL no SMOKE markers in the console log: the initramfs /init never ran (boot failure, hang or timeout)"
    return 1
  fi
  # Warnings during boot are not the modules' doing; those after /init started are.
  line="$(first_match "$(sed -n '/^SMOKE init start/,$p' <<<"${log}")" 'WARNING: CPU: ')"
  if [[ -n "${line}" ]]; then
    echo "FAIL kernel warning while loading modules on ${release}: ${line}"
    return 1
  fi
  if [[ -n "${want_release}" && "${release}" != "${want_release}" ]]; then
    echo "FAIL guest booted ${release}, expected ${want_release}"
    return 1
  fi
  line="$(grep -a -m 1 -E '^SMOKE insmod dep [^ ]+ rc=[1-9][0-9]*$' <<<"${log}" || true)"
  if [[ -n "${line}" ]]; then
    rc="${line##*rc=}"
    line="${line#SMOKE insmod dep }"
    echo "FAIL dependency ${line%% *} of the nvidia modules did not load on ${release} (rc=${rc} $(errno_name "${rc}"))"
    return 1
  fi
  rc="$(sed -n 's/^SMOKE insmod nvidia rc=\([0-9][0-9]*\)$/\1/p' <<<"${log}" | head -n 1)"
  if [[ -z "${rc}" ]]; then
    echo "FAIL /init started but insmod nvidia.ko did not finish on ${release} (hang in module init, or timeout)"
    return 1
  fi
  if ! grep -a -q '^SMOKE done$' <<<"${log}"; then
    echo "FAIL guest stopped before /init finished on ${release} (insmod nvidia rc=${rc}; hang or timeout)"
    return 1
  fi
  if grep -a -q -F -- "${GPU_LINE}" <<<"${log}"; then
    gpu=1
  fi
  if [[ "${mode}" == expect-rejected ]]; then
    sig_verdict "${log}" "${rc}" "${gpu}" "${release}"
    return
  fi
  if [[ "${mode}" == expect-fail ]]; then
    if ((rc == 0)); then
      echo "FAIL expected nvidia.ko to be rejected on ${release}, but insmod succeeded (rc=0)"
      return 1
    fi
    if ((gpu)); then
      echo "FAIL expected nvidia.ko to be rejected on ${release}, but its init ran (${GPU_LINE})"
      return 1
    fi
    echo "PASS expected failure: nvidia.ko rejected on ${release} (rc=${rc} $(errno_name "${rc}")$(kernel_reason "${log}"))"
    return 0
  fi
  if ((gpu && rc == 19)); then
    echo "PASS nvidia.ko init ran on ${release} (NVRM: No NVIDIA GPU found, ENODEV)"
    return 0
  fi
  symbols="$(grep -a -o -E '(^|[] ])nvidia: Unknown symbol [^ ]+' <<<"${log}" | sed 's/.* //' | sort -u || true)"
  if [[ -n "${symbols}" ]]; then
    count="$(wc -l <<<"${symbols}")"
    echo "FAIL nvidia.ko has unresolved symbols on ${release} (Unknown symbol, ${count}): $(head -n 5 <<<"${symbols}" | paste -sd ' ' -)"
    return 1
  fi
  if ((rc == 0)); then
    echo "FAIL insmod nvidia.ko succeeded on ${release} although there is no NVIDIA GPU (${GPU_LINE} missing)"
  elif ((rc == 8)); then
    echo "FAIL nvidia.ko rejected on ${release}: invalid module format (rc=8 ENOEXEC$(kernel_reason "${log}"))"
  elif ((rc == 19)); then
    echo "FAIL insmod nvidia.ko failed with ENODEV on ${release} but '${GPU_LINE}' is missing"
  elif ((gpu)); then
    echo "FAIL '${GPU_LINE}' printed on ${release} but insmod rc=${rc} ($(errno_name "${rc}")), expected 19 (ENODEV)"
  else
    echo "FAIL insmod nvidia.ko failed on ${release}: rc=${rc} ($(errno_name "${rc}")$(kernel_reason "${log}"))"
  fi
  return 1
}

# sig_verdict LOG RC GPU RELEASE: expect-rejected's verdict (see smoke_verdict).
sig_verdict() {
  local log="$1" rc="$2" gpu="$3" release="$4" line
  if ! grep -a -q -E '(^| )module\.sig_enforce=1( |$)' <<<"${log}"; then
    echo "FAIL the guest's command line lacks module.sig_enforce=1 (not checked: the kernel did not print it)"
    return 1
  fi
  line="$(first_match "${log}" "${SIG_REJECT_RE}")"
  if ((gpu || rc == 0)); then
    echo "FAIL nvidia.ko loaded on ${release} under module.sig_enforce=1 (insmod rc=${rc}): signatures are not enforced"
    return 1
  fi
  if ((rc != 129)) || [[ -z "${line}" ]]; then
    echo "FAIL nvidia.ko refused on ${release} under module.sig_enforce=1, but not for its signature: rc=${rc} ($(errno_name "${rc}")$(kernel_reason "${log}"))"
    return 1
  fi
  echo "PASS nvidia.ko refused on ${release} under module.sig_enforce=1: insmod rc=129 ($(errno_name 129)), kernel: ${line#SMOKE dmesg nvidia: }"
}

# ": <first kernel message about nvidia>" that explains a rejection, or "".
kernel_reason() {
  local line
  line="$(grep -a -E '(^|[] ])(module )?nvidia: ' <<<"$1" |
    grep -a -v -E 'taint|^SMOKE dmesg nvidia-' | head -n 1 |
    sed -E 's/^SMOKE dmesg nvidia: //; s/^.*\[ *[0-9]+\.[0-9]+\] //' || true)"
  if [[ -n "${line}" ]]; then
    printf ': %s' "${line}"
  fi
}

# Show the interesting part of the console log on stderr after a failure.
show_log_excerpt() {
  local log="$1"
  local where="${log}"
  [[ -s "${log}" ]] || return 0
  if ((WORK_DIR_IS_TEMP && !OPT_KEEP)); then
    where="removed at exit; keep it with --keep or --work-dir"
  fi
  info "console log excerpt (${where}):"
  printable_log "${log}" |
    grep -a -E '^SMOKE |NVRM|nvidia|insmod|Unknown symbol|Kernel panic|BUG: |Oops|WARNING: |qemu' |
    grep -a -v -E '^SMOKE loaded: ' | head -n 60 >&2 || true
  info "last lines of the console log:"
  printable_log "${log}" | tail -n 15 >&2 || true
}

# The log without carriage returns, terminal escapes and other control bytes.
printable_log() {
  local -x LC_ALL=C
  sed -E 's/\x1b(\[[0-9;?]*[A-Za-z]|c)//g' "$1" | tr -cd '\11\12\40-\176'
}

main() {
  local log qemu_rc verdict status=0 mode=expect-pass start
  parse_args "$@"
  require_tools
  if ((OPT_SIG_ENFORCE)); then
    mode=expect-rejected
  elif ((OPT_EXPECT_FAIL)); then
    mode=expect-fail
  else
    check_vermagic
  fi
  setup_work_dir
  start="${SECONDS}"
  extract_debs
  resolve_deps
  build_initramfs
  info "prepared in $((SECONDS - start)) s; booting ${OPT_RELEASE} under QEMU/TCG (timeout ${OPT_TIMEOUT} s)"
  log="${WORK_DIR}/console.log"
  start="${SECONDS}"
  qemu_rc="$(boot_qemu "${log}")"
  info "QEMU exited with status ${qemu_rc} after $((SECONDS - start)) s"
  verdict="$(smoke_verdict "${log}" "${mode}" "${OPT_RELEASE}")" || status=$?
  if ((status == 0)); then
    printf '%s: %s\n' "${PROG}" "${verdict}"
    return "${EX_OK}"
  fi
  show_log_excerpt "${log}"
  case "${qemu_rc}" in
  0) result_fail "${verdict#FAIL }" ;;
  124 | 137) result_fail "timeout after ${OPT_TIMEOUT} s: ${verdict#FAIL }" ;;
  *) result_fail "QEMU exited with status ${qemu_rc}: ${verdict#FAIL }" ;;
  esac
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  main "$@"
fi
