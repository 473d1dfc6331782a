#!/usr/bin/env bats
# container/nvidia-driver, the entrypoint of `build.sh container`'s image, run
# against a fixture root (NVP2P_CTR_ROOT): image.conf and our options from
# test/fixtures/container, the DKMS payload, the node kernel's headers, the
# stand-in .run, run/ and sys/. Every command it runs on the node is a stub
# that logs its arguments to STUB_LOG: make "builds" the five modules,
# modprobe "loads" one (sys/module/<name>, with the version of the installed
# .ko for nvidia), rmmod unloads it, apt-get "installs" the headers. Knobs:
#   CTR_UNAME=KVER          uname -r (default CTR_KREL)
#   CTR_MAKE_FAIL=1         the build fails
#   CTR_MODPROBE_FAIL=M     modprobe M fails (M as given: nvidia-uvm)
#   CTR_RMMOD_FAIL=N        rmmod N fails, module in use (N: nvidia_uvm)
#   CTR_APT_FAIL=1          apt-get install fails
#   CTR_APT_NO_BUILD=1      apt-get install succeeds but leaves no build dir
#   CTR_MOUNTED="P..."      mountpoint says yes for these paths
#   CTR_MOUNT_FAIL=1        mount --rbind fails
#   CTR_UMOUNT_FAIL=1       umount fails (busy)
#   CTR_REAL_SLEEP=FILE     sleep really sleeps (its pid appended to FILE)
# rmmod nvidia also fails while the process of the pid file of
# nvidia-persistenced runs (it holds the GPUs open).

load ../test_helper

CTR_TAG=570.211.01
CTR_KREL=6.1.0-99-test
CTR_MODULES=(nvidia nvidia-uvm nvidia-modeset nvidia-drm nvidia-peermem)

setup() {
  common_env "${BATS_TEST_TMPDIR}"
  mkdir -p "${HOME}" "${STUBS}"
  : >"${STUB_LOG}"
  unset KERNEL_VERSION KERNEL_MODULE_TYPE OPEN_KERNEL_MODULES_ENABLED GPU_DIRECT_RDMA_ENABLED \
    DRIVER_CONFIG_DIGEST USE_HOST_MOFED NVIDIA_P2P_SIGN_DIR \
    CTR_UNAME CTR_MAKE_FAIL CTR_MODPROBE_FAIL CTR_RMMOD_FAIL CTR_APT_FAIL CTR_APT_NO_BUILD \
    CTR_MOUNTED CTR_MOUNT_FAIL CTR_UMOUNT_FAIL CTR_REAL_SLEEP STANDIN_FAIL CTR_KPKG
  CTR="${REPO_ROOT}/container/nvidia-driver"
  CFIX="${REPO_ROOT}/test/fixtures/container"
  export NVP2P_CTR_ROOT="${BATS_TEST_TMPDIR}/ctr" NVP2P_CTR_WAIT=0
  CR=${NVP2P_CTR_ROOT}
  SRC="${CR}/usr/src/nvidia-p2p-${CTR_TAG}"
  DRV="${CR}/run/nvidia/driver"
  PIDF="${CR}/run/nvidia/nvidia-driver.pid"
  STATE="${CR}/run/nvidia/nvidia-driver.state"
  CONF="${CR}/etc/modprobe.d/nvidia-p2p.conf"
  SLEEP_PIDS="${BATS_TEST_TMPDIR}/sleep.pids"
  INIT_PID=""
  CTR_SLEEP_BIN=$(type -P sleep)
  export CTR_TAG CTR_KREL CTR_SLEEP_BIN STANDIN_ROOT="${CR}"
  ctr_tree
  ctr_stubs
}

teardown() {
  local p
  [[ -z ${INIT_PID} ]] || kill -KILL "${INIT_PID}" 2>/dev/null || true
  if [[ -r ${SLEEP_PIDS} ]]; then
    while read -r p; do
      kill "${p}" 2>/dev/null || true
    done <"${SLEEP_PIDS}"
  fi
}

# ctr_tree: the image's files and the node's, as the container sees them.
ctr_tree() {
  # the kernel's own modules (kernel/) are there: none to fetch unless a test removes them
  mkdir -p "${CR}/usr/share/nvidia-p2p" "${SRC}" "${CR}/lib/modules/${CTR_KREL}/build" "${CR}/drivers" \
    "${CR}/lib/modules/${CTR_KREL}/kernel" \
    "${CR}/etc" "${CR}/run" "${CR}/sys/module/firmware_class/parameters" "${CR}/sys/bus/pci/devices/0000:01:00.0"
  cp "${CFIX}/image.conf" "${CFIX}/nvidia-p2p.conf" "${CR}/usr/share/nvidia-p2p/"
  printf 'obj-m := nvidia.o\n' >"${SRC}/Kbuild"
  printf '# headers of %s\n' "${CTR_KREL}" >"${CR}/lib/modules/${CTR_KREL}/build/Makefile"
  sed "s/@VERSION@/${CTR_TAG}/" "${REPO_ROOT}/test/fixtures/standin.run.in" >"${CR}/drivers/NVIDIA-Linux-x86_64-${CTR_TAG}.run"
  chmod +x "${CR}/drivers/NVIDIA-Linux-x86_64-${CTR_TAG}.run"
  : >"${CR}/sys/module/firmware_class/parameters/path"
  printf '0x10de\n' >"${CR}/sys/bus/pci/devices/0000:01:00.0/vendor"
}

ctr_stubs() {
  stub uname - <<'STUB'
case "$1" in -r) echo "${CTR_UNAME:-${CTR_KREL}}" ;; *) echo Linux ;; esac
STUB
  stub nproc - <<<'echo 4'
  stub make - <<'STUB'
dir="" krel=""
for a in "$@"; do [[ ${a} == KERNEL_UNAME=* ]] && krel=${a#*=}; done
while [[ $# -gt 0 ]]; do [[ $1 == -C ]] && dir=$2; shift; done
[[ -z ${CTR_MAKE_FAIL:-} ]] || { echo "nv.c:1:1: error: fake failure" >&2; exit 2; }
for m in nvidia nvidia-uvm nvidia-modeset nvidia-drm nvidia-peermem; do
  printf 'name=%s\nversion=%s\nvermagic=%s SMP mod_unload\n' "${m}" "${CTR_TAG}" "${krel}" >"${dir}/${m}.ko"
done
printf '0x00000000\tnvidia_p2p_get_pages\t%s/nvidia\tEXPORT_SYMBOL\n' "${dir}" >"${dir}/Module.symvers"
STUB
  stub modprobe - <<'STUB'
m=${!#}
n=${m//-/_}
if [[ " ${CTR_MODPROBE_FAIL:-} " == *" ${m} "* ]]; then
  echo "modprobe: ERROR: could not insert '${n}': Invalid argument" >&2
  exit 1
fi
ko="${NVP2P_CTR_ROOT}/lib/modules/${CTR_UNAME:-${CTR_KREL}}/updates/nvidia-p2p/${m}.ko"
[[ -f ${ko} ]] || { echo "modprobe: FATAL: Module ${m} not found" >&2; exit 1; }
d="${NVP2P_CTR_ROOT}/sys/module/${n}"
mkdir -p "${d}"
echo 0 >"${d}/refcnt"
[[ ${n} != nvidia ]] || sed -n 's/^version=//p' "${ko}" >"${d}/version"
STUB
  stub rmmod - <<'STUB'
n=${!#}
d="${NVP2P_CTR_ROOT}/sys/module/${n}"
[[ -e ${d} ]] || { echo "rmmod: ERROR: Module ${n} is not currently loaded" >&2; exit 1; }
pf="${NVP2P_CTR_ROOT}/var/run/nvidia-persistenced/nvidia-persistenced.pid"
if [[ " ${CTR_RMMOD_FAIL:-} " == *" ${n} "* ]] ||
  [[ ${n} == nvidia && -r ${pf} && -e /proc/$(cat "${pf}")/stat && $(cut -d' ' -f3 "/proc/$(cat "${pf}")/stat") != Z ]]; then
  echo "rmmod: ERROR: Module ${n} is in use" >&2
  exit 1
fi
rm -rf "${d}"
STUB
  stub apt-get - <<'STUB'
if [[ " $* " == *" download "* ]]; then
  # the kernel's package (CTR_KPKG names the one there is), with drm.ko in it
  [[ ${!#} == "${CTR_KPKG:-none}" ]] || { echo "E: Unable to locate package ${!#}" >&2; exit 100; }
  t=$(mktemp -d)
  mkdir -p "${t}/DEBIAN" "${t}/usr/lib/modules/${CTR_KREL}/kernel/drivers/gpu/drm"
  printf 'Package: %s\nVersion: 1\nArchitecture: amd64\nMaintainer: t <t@t>\nDescription: t\n' "${!#}" >"${t}/DEBIAN/control"
  : >"${t}/usr/lib/modules/${CTR_KREL}/kernel/drivers/gpu/drm/drm.ko"
  : >"${t}/usr/lib/modules/${CTR_KREL}/modules.order"
  dpkg-deb -b "${t}" "${PWD}/${!#}_1_amd64.deb" >/dev/null
  rm -rf "${t}"
  exit 0
fi
[[ " $* " == *" install "* ]] || exit 0
[[ -z ${CTR_APT_FAIL:-} ]] || { echo "E: Unable to locate package ${!#}" >&2; exit 100; }
[[ -n ${CTR_APT_NO_BUILD:-} ]] && exit 0
k=${!#}
mkdir -p "${NVP2P_CTR_ROOT}/lib/modules/${k#linux-headers-}/build"
: >"${NVP2P_CTR_ROOT}/lib/modules/${k#linux-headers-}/build/Makefile"
STUB
  stub mountpoint - <<'STUB'
[[ " ${CTR_MOUNTED:-} " == *" ${!#} "* ]]
STUB
  stub sleep - <<'STUB'
[[ -n ${CTR_REAL_SLEEP:-} ]] || exit 0
printf '%s\n' "$$" >>"${CTR_REAL_SLEEP}"
exec "${CTR_SLEEP_BIN}" "$@"
STUB
  stub mount - <<'STUB'
[[ -z ${CTR_MOUNT_FAIL:-} || $1 != --rbind ]] || { echo "mount: ${!#}: permission denied." >&2; exit 32; }
exit 0
STUB
  stub umount - <<'STUB'
[[ -z ${CTR_UMOUNT_FAIL:-} ]] || { echo "umount: ${!#}: target is busy." >&2; exit 32; }
exit 0
STUB
  local s
  for s in depmod chroot nvidia-persistenced; do
    stub "${s}"
  done
}

# ctr ARGS...: the entrypoint (run by bash: the image installs it 0755).
ctr() {
  bash "${CTR}" "$@"
}

# stub_log: the logged calls (a call without arguments has no trailing blank).
stub_log() {
  sed 's/ $//' "${STUB_LOG}"
}

# calls REGEX: the logged calls of the commands REGEX matches, in order.
calls() {
  stub_log | grep -E "^(${1})( |$)" || true
}

# loaded: the modules sys/module has, sorted (firmware_class aside).
loaded() {
  find "${CR}/sys/module" -mindepth 1 -maxdepth 1 ! -name firmware_class -printf '%f\n' | LC_ALL=C sort
}

# loaded_module NAME [VERSION]: NAME in sys/module, as a module loaded before
# init (VERSION: its version file, for nvidia).
loaded_module() {
  mkdir -p "${CR}/sys/module/$1"
  echo 1 >"${CR}/sys/module/$1/refcnt"
  [[ -z ${2:-} ]] || printf '%s\n' "$2" >"${CR}/sys/module/$1/version"
}

mellanox_nic() {
  mkdir -p "${CR}/sys/bus/pci/devices/0000:81:00.0"
  printf '0x15b3\n' >"${CR}/sys/bus/pci/devices/0000:81:00.0/vendor"
}

# precompiled_image KVER: image.conf says precompiled=KVER and the image holds
# the five modules for it (no payload build).
precompiled_image() {
  local m d="${CR}/usr/lib/nvidia-p2p/precompiled/$1"
  sed -i "s/^precompiled=.*/precompiled=$1/" "${CR}/usr/share/nvidia-p2p/image.conf"
  mkdir -p "${d}"
  for m in "${CTR_MODULES[@]}"; do
    printf 'name=%s\nversion=%s\nvermagic=%s SMP mod_unload\nprecompiled\n' "${m}" "${CTR_TAG}" "$1" >"${d}/${m}.ko"
  done
}

# start_init [VAR=VALUE...]: init in the background with VAR..., waiting for
# a signal (the real sleep); returns once it says so and its sleep runs (fails
# after 30 s).
start_init() {
  env -u NVP2P_CTR_WAIT CTR_REAL_SLEEP="${SLEEP_PIDS}" "$@" bash "${CTR}" init >"${BATS_TEST_TMPDIR}/init.out" 2>&1 3>&- &
  INIT_PID=$!
  wait_for 300 grep -q 'done, now waiting for signal' "${BATS_TEST_TMPDIR}/init.out" ||
    fail "init did not get to waiting: $(cat "${BATS_TEST_TMPDIR}/init.out")"
  wait_for 300 test -s "${SLEEP_PIDS}" || fail "init does not sleep"
}

# stop_init: SIGTERM to init; its exit status in INIT_RC (fails after 30 s).
stop_init() {
  kill -TERM "${INIT_PID}"
  wait_for 300 grep -q 'nvidia-driver: stopped' "${BATS_TEST_TMPDIR}/init.out" ||
    fail "init did not stop on SIGTERM: $(cat "${BATS_TEST_TMPDIR}/init.out")"
  INIT_RC=0
  wait "${INIT_PID}" || INIT_RC=$?
  INIT_PID=""
}

# stop_init_with_rmmod_failing: stop_init with nvidia_uvm in use (init's
# environment was fixed when it started: the rmmod stub itself changes).
stop_init_with_rmmod_failing() {
  stub rmmod - <<'STUB'
n=${!#}
d="${NVP2P_CTR_ROOT}/sys/module/${n}"
[[ -e ${d} ]] || { echo "rmmod: ERROR: Module ${n} is not currently loaded" >&2; exit 1; }
if [[ ${n} == nvidia_uvm ]]; then
  echo "rmmod: ERROR: Module ${n} is in use" >&2
  exit 1
fi
rm -rf "${d}"
STUB
  stop_init
}

# gone PID: no process PID (or a zombie).
gone() {
  [[ ! -e /proc/$1/stat || $(cut -d' ' -f3 "/proc/$1/stat") == Z ]]
}

# wait_for TENTHS CMD...: CMD succeeds within TENTHS tenths of a second.
wait_for() {
  local n=$1 i
  shift
  for ((i = 0; i < n; i++)); do
    "$@" && return 0
    "${CTR_SLEEP_BIN}" 0.1
  done
  return 1
}

# the userspace installer's logged call
RUN_CALL="standin.run --silent --no-kernel-modules --no-nouveau-check --no-nvidia-modprobe --no-rpms --no-backup --no-check-for-alternate-installs"
OUR_OPTIONS='options nvidia NVreg_EnableResizableBar=1 NVreg_RegistryDwords="ForceP2P=0x11;RMForceP2PType=2;RMBar1P2PKeepNvlink=1"'

@test "init: builds, installs userspace, writes our options, loads the three modules, publishes the root" {
  run bash -c 'echo "pid=$$"; exec bash "$1" init' _ "${CTR}"
  assert_success
  local pid=${lines[0]#pid=}
  run stub_log
  assert_output "$(
    cat <<EOF
uname -r
nproc
make -C ${SRC} -j4 NV_EXCLUDE_BUILD_MODULES= KERNEL_UNAME=${CTR_KREL} modules
depmod ${CTR_KREL}
${RUN_CALL}
modprobe nvidia
modprobe nvidia-uvm
modprobe nvidia-modeset
nvidia-persistenced --persistence-mode
mountpoint -q -- ${DRV}
mountpoint -q -- ${CR}/sys
mount --rbind ${CR} ${DRV}
EOF
  )"
  local m
  for m in "${CTR_MODULES[@]}"; do
    cmp "${SRC}/${m}.ko" "${CR}/lib/modules/${CTR_KREL}/updates/nvidia-p2p/${m}.ko"
  done
  run ls "${CR}/lib/modules/${CTR_KREL}/updates/nvidia-p2p"
  assert_output "$(printf '%s.ko\n' nvidia-drm nvidia-modeset nvidia-peermem nvidia-uvm nvidia)"
  run cat "${CONF}"
  assert_output "$(
    cat <<EOF
# Written by nvidia-driver init (nvidia-p2p ${CTR_TAG}): the image's options
# (/usr/share/nvidia-p2p/nvidia-p2p.conf), then the files of /drivers on top.
${OUR_OPTIONS}
EOF
  )"
  run cat "${PIDF}"
  assert_output "${pid}"
  run readlink "${CR}/usr/src/nvidia-${CTR_TAG}/kernel-open"
  assert_output "../nvidia-p2p-${CTR_TAG}"
  assert_file_exist "${CR}/usr/src/nvidia-${CTR_TAG}/kernel-open/Module.symvers"
  run cat "${CR}/sys/module/firmware_class/parameters/path"
  assert_output "/run/nvidia/driver/lib/firmware"
  run loaded
  assert_output "$(printf '%s\n' nvidia nvidia_modeset nvidia_uvm)"
  run cat "${CR}/sys/module/nvidia/version"
  assert_output "${CTR_TAG}"
  assert_file_exist "${CR}/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.${CTR_TAG}"
  assert_dir_exist "${DRV}"
  assert_not_exist "${STATE}"
}

@test "init: output names the driver, the kernel and the end state" {
  run ctr init
  assert_success
  assert_line --index 0 "nvidia-driver: driver ${CTR_TAG} (nvidia-p2p, family 570) for kernel ${CTR_KREL}"
  assert_line "nvidia-driver: modprobe nvidia-modeset"
  assert_line "nvidia-driver: module options: ${CONF}"
  refute_output --partial "Module.symvers is missing"
  refute_output --partial "nvidia-peermem"
  assert_line --index $((${#lines[@]} - 1)) "nvidia-driver: done, now waiting for signal"
}

@test "init: kernelModuleConfig files on top of ours: theirs win per parameter and per registry key" {
  cat >"${CR}/drivers/nvidia.conf" <<'EOF'
# the operator's kernelModuleConfig for nvidia

NVreg_EnableResizableBar=0
NVreg_PreserveVideoMemoryAllocations=1 NVreg_TemporaryFilePath=/var/tmp   # two on a line
   # an indented comment
NVreg_RegistryDwords="RMForceP2PType=0;NewKey=1"
EOF
  printf '# uvm\n\nuvm_perf_prefetch_enable=0\nuvm_disable_hmm=1' >"${CR}/drivers/nvidia-uvm.conf"
  printf 'hdmi_deepcolor=0\n' >"${CR}/drivers/nvidia-modeset.conf"
  run ctr init
  assert_success
  run cat "${CONF}"
  assert_output "$(
    cat <<EOF
# Written by nvidia-driver init (nvidia-p2p ${CTR_TAG}): the image's options
# (/usr/share/nvidia-p2p/nvidia-p2p.conf), then the files of /drivers on top.
options nvidia NVreg_EnableResizableBar=0 NVreg_RegistryDwords="ForceP2P=0x11;RMForceP2PType=0;RMBar1P2PKeepNvlink=1;NewKey=1" NVreg_PreserveVideoMemoryAllocations=1 NVreg_TemporaryFilePath=/var/tmp
options nvidia_uvm uvm_perf_prefetch_enable=0 uvm_disable_hmm=1
options nvidia_modeset hdmi_deepcolor=0
EOF
  )"
}

@test "init: kernelModuleConfig for nvidia-peermem only: our nvidia line unchanged, theirs as nvidia_peermem" {
  printf '\n# nothing but a comment\n' >"${CR}/drivers/nvidia.conf"
  printf 'peerdirect_support=1\n' >"${CR}/drivers/nvidia-peermem.conf"
  run ctr init
  assert_success
  run grep '^options' "${CONF}"
  assert_output "$(printf '%s\noptions nvidia_peermem peerdirect_support=1\n' "${OUR_OPTIONS}")"
}

@test "init: NVreg_EnableGpuFirmware=0 from kernelModuleConfig leaves the firmware path alone" {
  printf 'NVreg_EnableGpuFirmware=0\n' >"${CR}/drivers/nvidia.conf"
  run ctr init
  assert_success
  run grep '^options nvidia ' "${CONF}"
  assert_output "${OUR_OPTIONS} NVreg_EnableGpuFirmware=0"
  run cat "${CR}/sys/module/firmware_class/parameters/path"
  assert_output ""
}

@test "init: KERNEL_MODULE_TYPE=proprietary is unsupported (exit 3), before anything runs" {
  KERNEL_MODULE_TYPE=proprietary run ctr init
  assert_failure 3
  assert_output --partial "KERNEL_MODULE_TYPE=proprietary: this image carries NVIDIA's open kernel modules with P2P only"
  run stub_log
  assert_output "uname -r"
  assert_not_exist "${CONF}"
  assert_not_exist "${CR}/lib/modules/${CTR_KREL}/updates"
}

@test "init: KERNEL_MODULE_TYPE open and auto are accepted" {
  local t
  for t in open auto; do
    KERNEL_MODULE_TYPE=${t} run ctr init
    assert_success
  done
}

@test "init: an unknown KERNEL_MODULE_TYPE is a usage error (exit 2)" {
  KERNEL_MODULE_TYPE=closed run ctr init
  assert_failure 2
  assert_output --partial "KERNEL_MODULE_TYPE=closed: expected auto, open or proprietary"
  run stub_log
  assert_output "uname -r"
}

@test "init: OPEN_KERNEL_MODULES_ENABLED=false is unsupported (exit 3)" {
  OPEN_KERNEL_MODULES_ENABLED=false run ctr init
  assert_failure 3
  assert_output --partial "OPEN_KERNEL_MODULES_ENABLED=false: this image carries the open kernel modules only"
  run stub_log
  assert_output "uname -r"
}

@test "init: a precompiled image refuses another kernel (exit 13) before anything changes" {
  precompiled_image 6.1.0-56-amd64
  KERNEL_VERSION=6.12.38+deb13-amd64 run ctr init
  assert_failure 13
  assert_output --partial "this image holds modules precompiled for kernel 6.1.0-56-amd64, and this node runs 6.12.38+deb13-amd64"
  assert_output --partial "build.sh container ${CTR_TAG} --precompiled 6.12.38+deb13-amd64"
  run stub_log
  assert_output ""
  assert_not_exist "${CR}/lib/modules/6.12.38+deb13-amd64"
  assert_not_exist "${CONF}"
}

@test "init: a precompiled image on its kernel copies and loads its modules, no build, no headers" {
  precompiled_image 6.1.0-56-amd64
  mkdir -p "${CR}/lib/modules/6.1.0-56-amd64/kernel"
  CTR_UNAME=6.1.0-56-amd64 run ctr init
  assert_success
  assert_output --partial "modules precompiled for 6.1.0-56-amd64 (no build)"
  refute_output --partial "Module.symvers is missing"
  run stub_log
  assert_output "$(
    cat <<EOF
uname -r
depmod 6.1.0-56-amd64
${RUN_CALL}
modprobe nvidia
modprobe nvidia-uvm
modprobe nvidia-modeset
nvidia-persistenced --persistence-mode
mountpoint -q -- ${DRV}
mountpoint -q -- ${CR}/sys
mount --rbind ${CR} ${DRV}
EOF
  )"
  local m
  for m in "${CTR_MODULES[@]}"; do
    cmp "${CR}/usr/lib/nvidia-p2p/precompiled/6.1.0-56-amd64/${m}.ko" "${CR}/lib/modules/6.1.0-56-amd64/updates/nvidia-p2p/${m}.ko"
  done
  run loaded
  assert_output "$(printf '%s\n' nvidia nvidia_modeset nvidia_uvm)"
}

@test "init: a precompiled image missing one of its modules fails (exit 8), nothing loaded" {
  precompiled_image 6.1.0-56-amd64
  rm "${CR}/usr/lib/nvidia-p2p/precompiled/6.1.0-56-amd64/nvidia-drm.ko"
  CTR_UNAME=6.1.0-56-amd64 run ctr init
  assert_failure 8
  assert_output --partial "nvidia-drm.ko is missing"
  assert_equal "$(calls 'modprobe|make|depmod')" ""
}

@test "init: no headers in the image: apt-get installs linux-headers-<kver>, then the build" {
  rm -rf "${CR}/lib/modules/${CTR_KREL}/build"
  run ctr init
  assert_success
  assert_output --partial "installing linux-headers-${CTR_KREL} (apt-get)"
  run calls 'apt-get|make|modprobe'
  assert_output "$(
    cat <<EOF
apt-get -q update
apt-get -q -y install --no-install-recommends linux-headers-${CTR_KREL}
make -C ${SRC} -j4 NV_EXCLUDE_BUILD_MODULES= KERNEL_UNAME=${CTR_KREL} modules
modprobe nvidia
modprobe nvidia-uvm
modprobe nvidia-modeset
EOF
  )"
}

@test "init: no headers and apt-get fails: exit 13 naming linux-headers-<kver>, nothing built or loaded" {
  rm -rf "${CR}/lib/modules/${CTR_KREL}/build"
  CTR_APT_FAIL=1 run ctr init
  assert_failure 13
  assert_output --partial "no kernel headers for ${CTR_KREL}, the kernel this node runs: apt-get install linux-headers-${CTR_KREL} failed from the image's sources (none read)"
  assert_output --partial "build.sh container ${CTR_TAG} --precompiled ${CTR_KREL}"
  run calls 'apt-get|make|depmod|modprobe|mount'
  assert_output "$(printf 'apt-get -q update\napt-get -q -y install --no-install-recommends linux-headers-%s\n' "${CTR_KREL}")"
  run loaded
  assert_output ""
  assert_not_exist "${CONF}"
}

@test "init: apt-get succeeds but the build dir is still missing: exit 13" {
  rm -rf "${CR}/lib/modules/${CTR_KREL}/build"
  CTR_APT_NO_BUILD=1 run ctr init
  assert_failure 13
  assert_output --partial "linux-headers-${CTR_KREL} is installed but ${CR}/lib/modules/${CTR_KREL}/build is missing"
  assert_equal "$(calls 'make|modprobe')" ""
}

# kconfig TEXT [clang]: the headers' .config names the compiler the kernel was built with.
kconfig() {
  printf 'CONFIG_CC_VERSION_TEXT="%s"\n' "$1" >"${CR}/lib/modules/${CTR_KREL}/build/.config"
  [[ -z ${2:-} ]] || printf 'CONFIG_CC_IS_CLANG=y\n' >>"${CR}/lib/modules/${CTR_KREL}/build/.config"
}

@test "init: the modules are built with the compiler the headers name (CONFIG_CC_VERSION_TEXT)" {
  stub gcc-77
  kconfig "gcc-77 (Debian 77.2.0-14) 77.2.0"
  run ctr init
  assert_success
  assert_output --partial "building the five modules for ${CTR_KREL} (make -j4, gcc-77)"
  run calls make
  assert_output "make -C ${SRC} -j4 CC=gcc-77 NV_EXCLUDE_BUILD_MODULES= KERNEL_UNAME=${CTR_KREL} modules"
  # Ubuntu's name for it: x86_64-linux-gnu-gcc-77 absent, gcc-77 there
  : >"${STUB_LOG}"
  rm -rf "${CR}/run/nvidia" "${CR}/sys/module/nvidia"*
  kconfig "x86_64-linux-gnu-gcc-77 (Ubuntu 77.3.0-1ubuntu1~22.04) 77.3.0"
  run ctr init
  assert_success
  assert_equal "$(calls make)" "make -C ${SRC} -j4 CC=gcc-77 NV_EXCLUDE_BUILD_MODULES= KERNEL_UNAME=${CTR_KREL} modules"
}

@test "init: the image's gcc of the kernel's major is used when no gcc-<major> exists" {
  stub gcc - <<'STUB'
[[ $1 == -dumpversion ]] && echo 78
STUB
  kconfig "x86_64-linux-gnu-gcc-78 (Ubuntu 78.3.0-1ubuntu1~22.04) 78.3.0"
  run ctr init
  assert_success
  assert_equal "$(calls make)" "make -C ${SRC} -j4 CC=gcc NV_EXCLUDE_BUILD_MODULES= KERNEL_UNAME=${CTR_KREL} modules"
}

@test "init: a kernel built with another gcc major than the image has: exit 8 before building, naming both" {
  stub gcc - <<'STUB'
[[ $1 == -dumpversion ]] && echo 11
STUB
  kconfig "x86_64-linux-gnu-gcc-79 (Ubuntu 79.3.0-1ubuntu1~22.04) 79.3.0"
  run ctr init
  assert_failure 8
  assert_output --partial "kernel ${CTR_KREL} was built with x86_64-linux-gnu-gcc-79 (Ubuntu 79.3.0-1ubuntu1~22.04) 79.3.0 (its headers' CONFIG_CC_VERSION_TEXT), and this image has gcc 11"
  assert_output --partial "gcc-79"
  assert_equal "$(calls 'make|depmod|standin.run|modprobe|mount')" ""
  run loaded
  assert_output ""
}

@test "init: a kernel built with clang: exit 8 before building" {
  kconfig "Debian clang version 19.1.7 (3+b1)" clang
  run ctr init
  assert_failure 8
  assert_output --partial "was built with clang (Debian clang version 19.1.7 (3+b1)), and this image builds with gcc"
  assert_equal "$(calls 'make|modprobe')" ""
}

@test "the GPU Operator's own startup probe and preStop (vendored): the probe fails before init and while the daemons are not ready, passes after init; preStop clears" {
  source "${REPO_ROOT}/ci/heavy/gpu-operator.sh"
  # the probe's one call that needs a GPU
  stub nvidia-smi - <<<'echo "nvidia-smi: stub"'
  local st="${CR}/run/nvidia/validations/.driver-daemons-status" ready="${CR}/run/nvidia/validations/.driver-ctr-ready"
  run op_probe "${CR}" reroot
  assert_failure 1
  assert_output --partial "NVIDIA kernel module not loaded"
  # an init that fails leaves the daemons NotReady: the probe says so even with a module loaded
  CTR_MAKE_FAIL=1 run ctr init
  assert_failure 8
  run cat "${st}"
  assert_output NotReady
  loaded_module nvidia
  run op_probe "${CR}" reroot
  assert_failure 1
  assert_output --partial "NVIDIA driver daemons are not ready; Current status: NotReady"
  assert_not_exist "${ready}"
  rm -rf "${CR}/sys/module/nvidia"
  run ctr init
  assert_success
  run cat "${st}"
  assert_output Ready
  GPU_DIRECT_RDMA_ENABLED=true run op_probe "${CR}" reroot
  assert_success
  assert_output --partial "nvidia-smi: stub"
  run cat "${ready}"
  assert_output "$(printf 'GDRCOPY_ENABLED: false\nGDS_ENABLED: false\nGPU_DIRECT_RDMA_ENABLED: true')"
  run op_prestop "${CR}" reroot
  assert_success
  assert_not_exist "${ready}"
  assert_not_exist "${st}"
}

@test "init: NVSwitches without a fabric manager in the image: exit 3, what init loaded unloaded, the daemons not Ready" {
  mkdir -p "${CR}/proc/driver/nvidia-nvswitch/devices/0000:05:00.0"
  run ctr init
  assert_failure 3
  assert_output --partial "NVSwitches are present (${CR}/proc/driver/nvidia-nvswitch/devices): their GPUs need NVIDIA's fabric manager of driver ${CTR_TAG}"
  run loaded
  assert_output ""
  run cat "${CR}/run/nvidia/validations/.driver-daemons-status"
  assert_output NotReady
}

@test "init: NVSwitches and a fabric manager in the image: started after the load, then Ready" {
  mkdir -p "${CR}/proc/driver/nvidia-nvswitch/devices/0000:05:00.0"
  stub nv-fabricmanager
  run ctr init
  assert_success
  assert_output --partial "NVSwitches present: starting nv-fabricmanager"
  run calls 'modprobe|nvidia-persistenced|nv-fabricmanager'
  assert_output "$(
    cat <<EOF
modprobe nvidia
modprobe nvidia-uvm
modprobe nvidia-modeset
nvidia-persistenced --persistence-mode
nv-fabricmanager -c ${CR}/usr/share/nvidia/nvswitch/fabricmanager.cfg
EOF
  )"
  run cat "${CR}/run/nvidia/validations/.driver-daemons-status"
  assert_output Ready
}

@test "init: the operator's certConfig CAs are installed before the first apt-get; none mounted, none run" {
  stub update-ca-certificates
  rm -rf "${CR}/lib/modules/${CTR_KREL}/build"
  mkdir -p "${CR}/usr/local/share/ca-certificates"
  printf -- '-----BEGIN CERTIFICATE-----\n' >"${CR}/usr/local/share/ca-certificates/proxy.crt"
  run ctr init
  assert_success
  assert_output --partial "installing the CAs of ${CR}/usr/local/share/ca-certificates (certConfig)"
  run calls 'update-ca-certificates|apt-get'
  assert_output "$(printf 'update-ca-certificates\napt-get -q update\napt-get -q -y install --no-install-recommends linux-headers-%s\n' "${CTR_KREL}")"
  # an empty directory (no certConfig): nothing run
  rm -f "${CR}/usr/local/share/ca-certificates/proxy.crt"
  rm -rf "${CR}/lib/modules/${CTR_KREL}/build" "${CR}/run/nvidia" "${CR}/sys/module/nvidia"*
  : >"${STUB_LOG}"
  run ctr init
  assert_success
  assert_equal "$(calls update-ca-certificates)" ""
}

@test "init: nv-fabricmanager fails to start: exit 9, what init loaded unloaded, the daemons not Ready" {
  mkdir -p "${CR}/proc/driver/nvidia-nvswitch/devices/0000:05:00.0"
  stub nv-fabricmanager - <<<'exit 1'
  run ctr init
  assert_failure 9
  assert_output --partial "nv-fabricmanager did not start"
  run loaded
  assert_output ""
  run cat "${CR}/run/nvidia/validations/.driver-daemons-status"
  assert_output NotReady
}

@test "init: update-ca-certificates fails on the certConfig CAs: exit 13 before apt-get, nothing built" {
  stub update-ca-certificates - <<<'exit 1'
  rm -rf "${CR}/lib/modules/${CTR_KREL}/build"
  mkdir -p "${CR}/usr/local/share/ca-certificates"
  printf 'x\n' >"${CR}/usr/local/share/ca-certificates/bad.crt"
  run ctr init
  assert_failure 13
  assert_output --partial "update-ca-certificates failed on ${CR}/usr/local/share/ca-certificates"
  assert_equal "$(calls 'apt-get|make|modprobe')" ""
}

@test "the GPU Operator's driver validator search: a missing library, a missing nvidia-smi, an absolute link (outside the driver root as the validator sees it) all fail" {
  source "${REPO_ROOT}/ci/heavy/gpu-operator.sh"
  local r="${BATS_TEST_TMPDIR}/drv" lib="${BATS_TEST_TMPDIR}/drv/usr/lib/x86_64-linux-gnu"
  mkdir -p "${lib}" "${r}/usr/bin" "${r}/usr/lib/nvidia/current"
  run op_validator_driver "${r}"
  assert_failure 1
  assert_output --partial "validator: libnvidia-ml.so.1 in none of"
  : >"${lib}/libnvidia-ml.so.999.10.01"
  ln -s libnvidia-ml.so.999.10.01 "${lib}/libnvidia-ml.so.1"
  run op_validator_driver "${r}"
  assert_failure 1
  assert_output --partial "validator: nvidia-smi in none of"
  printf '#!/bin/sh\n' >"${r}/usr/lib/nvidia/current/nvidia-smi"
  chmod +x "${r}/usr/lib/nvidia/current/nvidia-smi"
  # Debian's alternatives style: an absolute link resolves outside the driver root
  ln -s /usr/lib/nvidia/current/nvidia-smi "${r}/usr/bin/nvidia-smi"
  run op_validator_driver "${r}"
  assert_failure 1
  rm "${r}/usr/bin/nvidia-smi"
  ln -s ../lib/nvidia/current/nvidia-smi "${r}/usr/bin/nvidia-smi"
  run op_validator_driver "${r}"
  assert_success
  assert_line "validator: libnvidia-ml.so.1 -> /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.999.10.01"
  assert_line "validator: nvidia-smi -> /usr/lib/nvidia/current/nvidia-smi"
}

@test "init: the build fails: exit 8, nothing installed or loaded" {
  CTR_MAKE_FAIL=1 run ctr init
  assert_failure 8
  assert_output --partial "the modules did not build for ${CTR_KREL}"
  assert_equal "$(calls 'depmod|standin.run|modprobe|mount')" ""
  assert_not_exist "${CR}/lib/modules/${CTR_KREL}/updates"
}

@test "init: the userspace installer fails: exit 9, nothing loaded" {
  STANDIN_FAIL=1 run ctr init
  assert_failure 9
  assert_output --partial "the userspace installer failed"
  assert_equal "$(calls 'modprobe|mount')" ""
  run loaded
  assert_output ""
}

@test "init: an image without the .run (--no-userspace) skips userspace and loads" {
  rm "${CR}/drivers/NVIDIA-Linux-x86_64-${CTR_TAG}.run"
  run ctr init
  assert_success
  assert_output --partial "(built with --no-userspace): userspace left out"
  assert_equal "$(calls standin.run)" ""
  run loaded
  assert_output "$(printf '%s\n' nvidia nvidia_modeset nvidia_uvm)"
}

@test "init: another driver loaded and in use: exit 14, nothing built or loaded" {
  loaded_module nvidia 550.163.01
  loaded_module nvidia_uvm
  CTR_RMMOD_FAIL=nvidia_uvm run ctr init
  assert_failure 14
  assert_output --partial "NVIDIA driver 550.163.01 is loaded and in use"
  run calls 'rmmod|make|depmod|standin.run|modprobe|mount'
  assert_output "rmmod nvidia_uvm"
  run cat "${CR}/sys/module/nvidia/version"
  assert_output "550.163.01"
  assert_not_exist "${CONF}"
  assert_not_exist "${CR}/lib/modules/${CTR_KREL}/updates"
}

@test "init: another driver loaded, not in use: unloaded first, then ours built and loaded" {
  loaded_module nvidia 550.163.01
  loaded_module nvidia_uvm
  loaded_module nvidia_modeset
  loaded_module nvidia_drm
  run ctr init
  assert_success
  assert_output --partial "NVIDIA driver 550.163.01 is loaded: unloading it first"
  run calls 'rmmod|make|modprobe'
  assert_output "$(
    cat <<EOF
rmmod nvidia_drm
rmmod nvidia_modeset
rmmod nvidia_uvm
rmmod nvidia
make -C ${SRC} -j4 NV_EXCLUDE_BUILD_MODULES= KERNEL_UNAME=${CTR_KREL} modules
modprobe nvidia
modprobe nvidia-uvm
modprobe nvidia-modeset
EOF
  )"
  run cat "${CR}/sys/module/nvidia/version"
  assert_output "${CTR_TAG}"
}

@test "init: modprobe nvidia-modeset fails: exit 9, what init loaded unloaded in reverse" {
  CTR_MODPROBE_FAIL=nvidia-modeset run ctr init
  assert_failure 9
  assert_output --partial "modprobe nvidia-modeset failed (dmesg says why); what this init loaded was unloaded again"
  run calls 'modprobe|rmmod|mount|nvidia-persistenced'
  assert_output "$(
    cat <<EOF
modprobe nvidia
modprobe nvidia-uvm
modprobe nvidia-modeset
rmmod nvidia_uvm
rmmod nvidia
EOF
  )"
  run loaded
  assert_output ""
}

@test "init: modprobe nvidia fails: exit 9 and nothing to unload" {
  CTR_MODPROBE_FAIL=nvidia run ctr init
  assert_failure 9
  run calls 'modprobe|rmmod'
  assert_output "modprobe nvidia"
}

@test "init: GPU_DIRECT_RDMA_ENABLED=true with a Mellanox device loads nvidia-peermem last" {
  mellanox_nic
  GPU_DIRECT_RDMA_ENABLED=true run ctr init
  assert_success
  run calls 'modprobe|nvidia-persistenced'
  assert_output "$(printf 'modprobe %s\n' nvidia nvidia-uvm nvidia-modeset nvidia-peermem && echo 'nvidia-persistenced --persistence-mode')"
  run loaded
  assert_output "$(printf '%s\n' nvidia nvidia_modeset nvidia_peermem nvidia_uvm)"
}

@test "init: GPU_DIRECT_RDMA_ENABLED=true without a Mellanox device: nvidia-peermem not loaded, and said" {
  GPU_DIRECT_RDMA_ENABLED=true run ctr init
  assert_success
  assert_output --partial "GPU_DIRECT_RDMA_ENABLED=true but no Mellanox device: nvidia-peermem not loaded"
  run calls modprobe
  assert_output "$(printf 'modprobe %s\n' nvidia nvidia-uvm nvidia-modeset)"
}

@test "init: a Mellanox device without GPU_DIRECT_RDMA_ENABLED: no nvidia-peermem" {
  mellanox_nic
  run ctr init
  assert_success
  refute_output --partial "nvidia-peermem"
  run calls modprobe
  assert_output "$(printf 'modprobe %s\n' nvidia nvidia-uvm nvidia-modeset)"
}

@test "init: nvidia-peermem fails to load: exit 9, the three unloaded in reverse" {
  mellanox_nic
  GPU_DIRECT_RDMA_ENABLED=true CTR_MODPROBE_FAIL=nvidia-peermem run ctr init
  assert_failure 9
  run calls rmmod
  assert_output "$(printf 'rmmod %s\n' nvidia_modeset nvidia_uvm nvidia)"
  run loaded
  assert_output ""
}

@test "init: a mounted /run/nvidia/driver is unmounted before the bind, a mounted /sys made unbindable" {
  CTR_MOUNTED="${DRV} ${CR}/sys" run ctr init
  assert_success
  run calls 'mountpoint|mount|umount'
  assert_output "$(
    cat <<EOF
mountpoint -q -- ${DRV}
umount -l -R -- ${DRV}
mountpoint -q -- ${CR}/sys
mount --make-runbindable ${CR}/sys
mount --make-private ${CR}/sys
mount --rbind ${CR} ${DRV}
EOF
  )"
}

@test "init: the root cannot be published (mount --rbind fails): exit 9, what init loaded unloaded" {
  CTR_MOUNT_FAIL=1 run ctr init
  assert_failure 9
  assert_output --partial "cannot bind the container's root at ${DRV}"
  run loaded
  assert_output ""
}

@test "init: a stale /run/nvidia/driver that cannot be unmounted: exit 9 naming it, what init loaded unloaded" {
  CTR_MOUNTED="${DRV}" CTR_UMOUNT_FAIL=1 run ctr init
  assert_failure 9
  assert_line --regexp "^nvidia-driver: .*${DRV}"
  refute_line "nvidia-driver: done, now waiting for signal"
  run loaded
  assert_output ""
}

@test "init: GPUDirect RDMA with MOFED's sources mounted: nvidia-peermem is built against them" {
  mkdir -p "${CR}/run/mellanox/drivers/usr/src/ofa_kernel"
  mellanox_nic
  GPU_DIRECT_RDMA_ENABLED=true run ctr init
  assert_success
  assert_output --partial "GPUDirect RDMA: nvidia-peermem built against MOFED's ofa_kernel"
  run readlink "${CR}/usr/src/ofa_kernel"
  assert_output /run/mellanox/drivers/usr/src/ofa_kernel
}

@test "init: GPUDirect RDMA without MOFED's sources: said, no ofa_kernel link; without RDMA nothing said" {
  mellanox_nic
  GPU_DIRECT_RDMA_ENABLED=true run ctr init
  assert_success
  assert_output --partial "GPUDirect RDMA: no MOFED sources at /run/mellanox/drivers/usr/src/ofa_kernel"
  assert_not_exist "${CR}/usr/src/ofa_kernel"
  mkdir -p "${CR}/run/mellanox/drivers/usr/src/ofa_kernel"
  rm -rf "${CR}/sys/module/nvidia"* "${CR}/run/nvidia"
  run ctr init
  assert_success
  refute_output --partial "GPUDirect RDMA"
  assert_not_exist "${CR}/usr/src/ofa_kernel"
}

@test "init: with a signing key pair mounted every module is signed before it is installed" {
  local keys="${CR}/run/secrets/nvidia-p2p" sf="${CR}/lib/modules/${CTR_KREL}/build/scripts/sign-file" m
  mkdir -p "${keys}" "$(dirname "${sf}")"
  printf 'KEY\n' >"${keys}/signing.key"
  printf 'CRT\n' >"${keys}/signing.crt"
  cat >"${sf}" <<'EOF'
#!/usr/bin/env bash
printf 'sign-file %s\n' "$*" >>"${STUB_LOG}"
printf '~Module signature appended~\n' >>"$4"
EOF
  chmod +x "${sf}"
  run ctr init
  assert_success
  assert_output --partial "signing the modules with ${keys}/signing.crt"
  run calls 'make|sign-file|depmod'
  assert_output "$(
    echo "make -C ${SRC} -j4 NV_EXCLUDE_BUILD_MODULES= KERNEL_UNAME=${CTR_KREL} modules"
    for m in "${CTR_MODULES[@]}"; do
      echo "sign-file sha256 ${keys}/signing.key ${keys}/signing.crt ${SRC}/${m}.ko"
    done
    echo "depmod ${CTR_KREL}"
  )"
  for m in "${CTR_MODULES[@]}"; do
    run tail -n 1 "${CR}/lib/modules/${CTR_KREL}/updates/nvidia-p2p/${m}.ko"
    assert_output "~Module signature appended~"
  done
}

@test "init: a signing key without its certificate, or no sign-file: exit 15, nothing installed" {
  local keys="${CR}/run/secrets/nvidia-p2p"
  mkdir -p "${keys}"
  printf 'KEY\n' >"${keys}/signing.key"
  run ctr init
  assert_failure 15
  assert_output --partial "${keys} needs both signing.key and signing.crt"
  printf 'CRT\n' >"${keys}/signing.crt"
  run ctr init
  assert_failure 15
  assert_output --partial "${CR}/lib/modules/${CTR_KREL}/build/scripts/sign-file is missing: cannot sign for ${CTR_KREL}"
  assert_equal "$(calls 'depmod|modprobe')" ""
  assert_not_exist "${CR}/lib/modules/${CTR_KREL}/updates"
}

@test "init: SIGTERM unloads the modules in reverse, unmounts /run/nvidia/driver, removes the pid file" {
  mellanox_nic
  start_init GPU_DIRECT_RDMA_ENABLED=true CTR_MOUNTED="${DRV}" DRIVER_CONFIG_DIGEST=abc
  assert_file_exist "${PIDF}"
  run cat "${STATE}"
  assert_output abc
  # something loaded nvidia-drm meanwhile
  loaded_module nvidia_drm
  cp "${STUB_LOG}" "${BATS_TEST_TMPDIR}/before-stop"
  local sleeper
  sleeper=$(head -n 1 "${SLEEP_PIDS}")
  stop_init
  assert_equal "${INIT_RC}" 0
  wait_for 50 gone "${sleeper}" || fail "init's sleep ${sleeper} outlived it"
  run bash -c 'diff "$1" "$2" | sed -n "s/^> //p"' _ "${BATS_TEST_TMPDIR}/before-stop" "${STUB_LOG}"
  assert_output "$(
    cat <<EOF
rmmod nvidia_peermem
rmmod nvidia_drm
rmmod nvidia_modeset
rmmod nvidia_uvm
rmmod nvidia
mountpoint -q -- ${DRV}
umount -l -R -- ${DRV}
EOF
  )"
  run loaded
  assert_output ""
  assert_not_exist "${PIDF}"
  assert_not_exist "${STATE}"
  run cat "${BATS_TEST_TMPDIR}/init.out"
  assert_line "nvidia-driver: stopping: unloading the modules"
}

@test "init: SIGTERM while a module is in use: exit 14, it stays loaded, the root still unpublished" {
  start_init CTR_MOUNTED="${DRV}" DRIVER_CONFIG_DIGEST=abc
  stop_init_with_rmmod_failing
  assert_equal "${INIT_RC}" 14
  # the modules stay: so does the state that lets the next init keep them
  run cat "${STATE}"
  assert_output abc
  run loaded
  assert_output "$(printf '%s\n' nvidia nvidia_uvm)"
  run calls umount
  assert_output "$(printf 'umount -l -R -- %s\n' "${DRV}" "${DRV}")"
  assert_not_exist "${PIDF}"
  run cat "${BATS_TEST_TMPDIR}/init.out"
  assert_line "nvidia-driver: a module is still in use: it stays loaded (and the state file with it)"
}

@test "init: SIGTERM stops the nvidia-persistenced init started before unloading nvidia" {
  stub nvidia-persistenced - <<'STUB'
d="${NVP2P_CTR_ROOT}/var/run/nvidia-persistenced"
mkdir -p "${d}"
"${CTR_SLEEP_BIN}" 300 </dev/null >/dev/null 2>&1 3>&- &
printf '%s\n' "$!" >"${d}/nvidia-persistenced.pid"
printf '%s\n' "$!" >>"${CTR_REAL_SLEEP}"
STUB
  start_init
  local daemon
  daemon=$(cat "${CR}/var/run/nvidia-persistenced/nvidia-persistenced.pid")
  stop_init
  assert_equal "${INIT_RC}" 0
  wait_for 50 gone "${daemon}" || fail "nvidia-persistenced (${daemon}) still runs after init stopped"
  run loaded
  assert_output ""
}

@test "init: a second init while the lock is held exits 11, changing nothing" {
  mkdir -p "${CR}/run/nvidia"
  local fd
  exec {fd}>"${PIDF}"
  flock -n "${fd}"
  run ctr init
  exec {fd}>&-
  assert_failure 11
  assert_output --partial "another nvidia-driver init holds ${PIDF}"
  run stub_log
  assert_output "uname -r"
  assert_not_exist "${CONF}"
}

@test "init: fast path: our tag loaded with the same DRIVER_CONFIG_DIGEST keeps the modules" {
  loaded_module nvidia "${CTR_TAG}"
  loaded_module nvidia_uvm
  loaded_module nvidia_modeset
  mkdir -p "${CR}/run/nvidia"
  printf 'abc\n' >"${STATE}"
  DRIVER_CONFIG_DIGEST=abc run ctr init
  assert_success
  assert_output --partial "driver ${CTR_TAG} already loaded with this configuration (DRIVER_CONFIG_DIGEST): modules kept"
  run stub_log
  assert_output "$(
    cat <<EOF
uname -r
${RUN_CALL}
nvidia-persistenced --persistence-mode
mountpoint -q -- ${DRV}
mountpoint -q -- ${CR}/sys
mount --rbind ${CR} ${DRV}
EOF
  )"
  # the daemons started again, as NVIDIA's image does on its fast path
  run cat "${CR}/run/nvidia/validations/.driver-daemons-status"
  assert_output Ready
  run cat "${STATE}"
  assert_output abc
  run loaded
  assert_output "$(printf '%s\n' nvidia nvidia_modeset nvidia_uvm)"
}

@test "init: our tag loaded with another DRIVER_CONFIG_DIGEST is reloaded and the new digest stored" {
  loaded_module nvidia "${CTR_TAG}"
  loaded_module nvidia_uvm
  loaded_module nvidia_modeset
  mkdir -p "${CR}/run/nvidia"
  printf 'old\n' >"${STATE}"
  DRIVER_CONFIG_DIGEST=new run ctr init
  assert_success
  refute_output --partial "modules kept"
  run calls 'rmmod|make|modprobe'
  assert_output "$(
    cat <<EOF
rmmod nvidia_modeset
rmmod nvidia_uvm
rmmod nvidia
make -C ${SRC} -j4 NV_EXCLUDE_BUILD_MODULES= KERNEL_UNAME=${CTR_KREL} modules
modprobe nvidia
modprobe nvidia-uvm
modprobe nvidia-modeset
EOF
  )"
  run cat "${STATE}"
  assert_output new
}

@test "version prints image.conf" {
  run ctr version
  assert_success
  assert_output "$(cat "${CFIX}/image.conf")"
  run stub_log
  assert_output ""
}

@test "an unknown command is a usage error (exit 2), no command too" {
  run ctr frobnicate
  assert_failure 2
  assert_line --index 0 --partial "Usage: nvidia-driver init"
  assert_line "nvidia-driver: unknown command 'frobnicate'"
  run ctr
  assert_failure 2
  assert_line "nvidia-driver: unknown command ''"
  run ctr --help
  assert_success
  assert_line --index 0 --partial "Usage: nvidia-driver init"
}

@test "a missing image.conf is bad image data (exit 4) for version and init" {
  rm "${CR}/usr/share/nvidia-p2p/image.conf"
  run ctr version
  assert_failure 4
  assert_output "nvidia-driver: ${CR}/usr/share/nvidia-p2p/image.conf is missing: this is not an image made by build.sh container"
  run ctr init
  assert_failure 4
  run stub_log
  assert_output ""
  assert_not_exist "${PIDF}"
}

@test "a bad tag in image.conf is bad image data (exit 4)" {
  sed -i 's/^tag=.*/tag=latest/' "${CR}/usr/share/nvidia-p2p/image.conf"
  run ctr init
  assert_failure 4
  assert_output "nvidia-driver: ${CR}/usr/share/nvidia-p2p/image.conf: bad tag 'latest'"
}

@test "probe_nvidia_peermem: mlx5_core without nvidia-peermem fails, with it or without mlx5_core passes" {
  run ctr probe_nvidia_peermem
  assert_success
  loaded_module mlx5_core
  run ctr probe_nvidia_peermem
  assert_failure 1
  assert_output "nvidia-driver: mlx5_core is loaded but nvidia-peermem is not"
  loaded_module nvidia_peermem
  run ctr probe_nvidia_peermem
  assert_success
  assert_output ""
}

@test "reload_nvidia_peermem: with the host's MOFED and the driver up, reloads nvidia-peermem in the published root" {
  loaded_module mlx5_core
  loaded_module nvidia "${CTR_TAG}"
  loaded_module nvidia_peermem
  USE_HOST_MOFED=true run ctr reload_nvidia_peermem
  assert_success
  assert_line "nvidia-driver: nvidia-peermem loaded"
  run stub_log
  assert_output "$(printf 'rmmod nvidia_peermem\nchroot %s modprobe nvidia-peermem\nsleep infinity\n' "${DRV}")"
}

@test "init: the kernel's own modules missing: Debian's linux-image-<kver> (or Ubuntu's linux-modules-<kver>) is downloaded and its modules unpacked, before depmod" {
  rm -rf "${CR}/lib/modules/${CTR_KREL}/kernel"
  CTR_KPKG="linux-image-${CTR_KREL}" run bash "${CTR}" init
  assert_success
  assert_output --partial "the kernel's own modules for ${CTR_KREL}"
  assert_file_exists "${CR}/lib/modules/${CTR_KREL}/kernel/drivers/gpu/drm/drm.ko"
  assert_file_exists "${CR}/lib/modules/${CTR_KREL}/modules.order"
  run calls 'apt-get|depmod'
  assert_output "$(printf 'apt-get -q update\napt-get -q download linux-image-%s\napt-get -q download linux-modules-%s\ndepmod %s\n' "${CTR_KREL}" "${CTR_KREL}" "${CTR_KREL}")"
  rm -rf "${CR}/lib/modules/${CTR_KREL}/kernel"
  CTR_KPKG="linux-modules-${CTR_KREL}" run bash "${CTR}" init
  assert_success
  assert_file_exists "${CR}/lib/modules/${CTR_KREL}/kernel/drivers/gpu/drm/drm.ko"
}

@test "init: no package of the kernel's modules: a warning, and ours are loaded alone" {
  rm -rf "${CR}/lib/modules/${CTR_KREL}/kernel"
  run bash "${CTR}" init
  assert_success
  assert_output --partial "warning: no package of kernel ${CTR_KREL}'s modules: nvidia needs drm, nvidia-modeset video, loaded on the node already"
  run calls modprobe
  assert_output "$(printf 'modprobe nvidia\nmodprobe nvidia-uvm\nmodprobe nvidia-modeset\n')"
}
