#!/usr/bin/env bash
# ci/heavy/container-test.sh: `build.sh container` with the real tools, and the
# image's entrypoint run against a Debian kernel's headers in a chroot of the
# unpacked image (test/real/container.bats runs it; root, network to Debian's
# archive for mmdebstrap and the headers).
#
#   ci/heavy/container-test.sh --git DIR --cache DIR --work DIR --out DIR --tag TAG
#                        --kernel KVER --other-kernel KVER2 --userspace SUITE
#
# What it does, one PASS/FAIL line per step (ci/heavy/chroot-checks.sh's step):
# the image built twice from the same inputs (same manifest digest) and
# inspected with skopeo (entrypoint, environment, labels, annotations, two
# layers); unpacked with umoci; `nvidia-driver init` run in a chroot of it,
# in a private mount namespace, for KVER: it installs linux-headers-KVER with
# apt, unpacks the kernel's own modules (drm, which nvidia needs) from
# linux-image-KVER, builds the five modules, installs the userspace, writes the
# options with a kernelModuleConfig file on top, loads, publishes its root at
# /run/nvidia/driver and waits. While it waits, NVIDIA's GPU Operator's own
# checks (ci/heavy/gpu-operator.sh): its startup probe script in the chroot (only
# its nvidia-smi call, the one that needs a GPU, a stub), the driver
# validator's search for libnvidia-ml.so.1 and nvidia-smi in the published
# root, and the real nvidia-smi run with that library preloaded, as the
# validator runs it, up to where it needs the kernel driver (no GPU here:
# exit 9, "couldn't communicate with the NVIDIA driver"); then the preStop
# command; SIGTERM tears init down. Loading is replaced at
# that one boundary: modprobe and rmmod in the image's /usr/local/sbin (first
# on PATH) record their arguments, resolve the module and its options with
# the real `modprobe --dry-run` and mark it loaded in the chroot's /sys (the
# host's /sys is never mounted there). Then bad input: a kernel with no
# headers (13), another driver loaded and in use (14). Then a precompiled
# image for KVER: refused on KVER2 (13, nothing loaded), loaded on KVER with
# no build. The userspace: NVIDIA's .run cannot be downloaded here, so the
# image carries one made by ci/setup/debian-run.sh from Debian's packages of TAG in
# SUITE (the real nvidia-smi and libnvidia-ml, laid out as the .run puts
# them); TAG must be a version Debian has there (bookworm: 535.261.03).
# Exit: 0 every step passed, 1 a step failed, 2 usage, 77 cannot run here.
set -euo pipefail
shopt -s inherit_errexit

CI_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
REPO="$(dirname "${CI_DIR}")"
# shellcheck source=ci/heavy/chroot-checks.sh
source "${CI_DIR}/heavy/chroot-checks.sh"

GIT="" CACHE="" WORK="" OUT="" TAG="" KVER="" KVER2="" SUITE=""
INIT_TIMEOUT=${NVP2P_CTR_INIT_TIMEOUT:-2400}

# shellcheck source=ci/helpers/usage.sh
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/usage.sh"

main() {
  help_exit "$@"
  parse "$@"
  [[ $(id -u) -eq 0 ]] || die 77 "needs root (chroot, mounts)"
  local t
  # shellcheck source=ci/heavy/gpu-operator.sh
  source "${CI_DIR}/heavy/gpu-operator.sh"
  for t in umoci skopeo mmdebstrap unshare; do
    command -v "${t}" >/dev/null || die 77 "${t} is not installed"
  done
  mkdir -p -- "${OUT}"
  STEP_LOG="${OUT}/steps.log"
  : >"${STEP_LOG}"
  make_data
  step "build: the image of ${TAG}" build_image a
  step "reproducible: built again, the same manifest and layer digests" reproducible
  step "inspect: entrypoint, environment, labels, annotations, two layers" inspect_image
  step "unpack: umoci unpack, the module-boundary stubs in /usr/local/sbin" unpack a "${OUT}/a-bundle"
  step "init for ${KVER}: headers from apt, five modules built, userspace, options, loaded, /run/nvidia/driver published" init_runs
  step "userspace: Debian's nvidia-smi and libnvidia-ml of ${TAG} (${SUITE}) where NVIDIA's .run puts them" userspace_real
  step "operator: its startup probe passes (its own script; nvidia-smi stubbed), .driver-ctr-ready written" operator_probe
  step "operator: the driver validator finds libnvidia-ml.so.1 and nvidia-smi in the published root; that nvidia-smi runs with it preloaded up to the driver" operator_validator
  step "modules: five, version ${TAG}, vermagic ${KVER}, where modprobe finds them, drm from the kernel's package" init_modules
  step "options: ours with the kernelModuleConfig files on top" init_options
  step "exports: sources and Module.symvers, NVIDIA's layout linked" init_exports
  step "operator: its preStop command removes .driver-ctr-ready and .driver-daemons-status" operator_prestop
  step "stop: SIGTERM unloads in order, unpublishes, removes the pid file, exit 0" init_stops
  step "bad input: a kernel without headers exits 13, nothing loaded" no_headers
  step "bad input: another driver loaded and in use exits 14, nothing changed" other_driver
  step "precompiled: built for ${KVER} with its modules in the image" build_image p --precompiled "${KVER}"
  step "precompiled: a node on ${KVER2} is refused (13), nothing loaded" precompiled_refuses
  step "precompiled: on ${KVER} it loads without building or fetching (the kernel's drm baked in)" precompiled_loads
  steps_passed
}

parse() {
  while [[ $# -gt 0 ]]; do
    [[ $# -ge 2 ]] || die 2 "$1 needs a value"
    case $1 in
    --git) GIT=$2 ;;
    --cache) CACHE=$2 ;;
    --work) WORK=$2 ;;
    --out) OUT=$2 ;;
    --tag) TAG=$2 ;;
    --kernel) KVER=$2 ;;
    --other-kernel) KVER2=$2 ;;
    --userspace) SUITE=$2 ;;
    *) usage_error "unknown option $1" ;;
    esac
    shift 2
  done
  [[ -n ${GIT} && -n ${CACHE} && -n ${WORK} && -n ${OUT} && -n ${TAG} && -n ${KVER} && -n ${KVER2} && -n ${SUITE} ]] ||
    usage_error "needs --git, --cache, --work, --out, --tag, --kernel, --other-kernel and --userspace"
}

# make_data: the repository's data with TAG's .run pin set to the one
# ci/setup/debian-run.sh makes from Debian's packages.
make_data() {
  local sha
  DATA="${OUT}/data"
  rm -rf -- "${DATA}"
  mkdir -p -- "${DATA}"
  cp -a -- "${REPO}/series" "${REPO}/patches" "${REPO}/kernels.conf" "${DATA}/"
  "${CI_DIR}/setup/debian-run.sh" "${TAG}" "${SUITE}" "${OUT}/standin.run" || die 1 "no userspace of ${TAG} from Debian's ${SUITE}"
  sha=$(sha256sum "${OUT}/standin.run" | cut -d' ' -f1)
  awk -v t="${TAG}" -v s="${sha}" '$1 == t { $6 = s } { print }' "${REPO}/versions.conf" >"${DATA}/versions.conf"
}

# build_image NAME [OPTIONS...]: build.sh container into OUT/NAME; REF_NAME set.
build_image() {
  local name=$1 ref
  local -a op=()
  shift
  # below branch 580 the operator's validator workload (v26.7.0+) is off
  [[ ${TAG%%.*} -ge 580 ]] || op=(--no-validator-workload)
  rm -rf -- "${OUT:?}/${name}"
  ref=$(NVP2P_DATA_DIR="${DATA}" SOURCE_DATE_EPOCH=1700000000 "${REPO}/build.sh" --cache-dir "${CACHE}" --work-dir "${WORK}" \
    container "${TAG}" --source "${GIT}" --run "${OUT}/standin.run" --out "${OUT}/${name}" "${op[@]}" "$@")
  echo "${ref}"
  printf '%s\n' "${ref##*:}" >"${OUT}/${name}.ref"
}

ref_of() { cat "${OUT}/$1.ref"; }

reproducible() {
  local d1 d2
  build_image b
  d1=$(skopeo inspect --raw "oci:${OUT}/a:$(ref_of a)" | sha256sum)
  d2=$(skopeo inspect --raw "oci:${OUT}/b:$(ref_of b)" | sha256sum)
  skopeo inspect "oci:${OUT}/a:$(ref_of a)" | grep -A3 Layers
  [[ ${d1} == "${d2}" ]] || { echo "manifests differ: ${d1} / ${d2}" && return 1; }
}

inspect_image() {
  local image cfg raw
  image="oci:${OUT}/a:$(ref_of a)"
  cfg=$(skopeo inspect --config "${image}")
  raw=$(skopeo inspect --raw "${image}")
  printf '%s\n%s\n' "${cfg}" "${raw}"
  [[ $(ref_of a) == "${TAG}-debian12" ]] || { echo "reference $(ref_of a)" && return 1; }
  grep -q '"Entrypoint": *\[ *"/usr/local/bin/nvidia-driver" *\]' <<<"$(tr -d '\n' <<<"${cfg}")" || return 1
  grep -q '"Cmd": *\[ *"init" *\]' <<<"$(tr -d '\n' <<<"${cfg}")" || return 1
  grep -q '"DRIVER_VERSION='"${TAG}"'"' <<<"${cfg}" || return 1
  grep -q '"NVIDIA_VISIBLE_DEVICES=void"' <<<"${cfg}" || return 1
  grep -q '"org.opencontainers.image.version": *"'"${TAG}"'"' <<<"${cfg}" || return 1
  grep -q '"nvidia-p2p.run-sha256": *"'"$(sha256sum "${OUT}/standin.run" | cut -d' ' -f1)"'"' <<<"${cfg}" || return 1
  grep -q '"nvidia-p2p.upstream-tree": *"[0-9a-f]\{40\}"' <<<"${raw}" || return 1
  [[ $(grep -o '"application/vnd.oci.image.layer.v1.tar+gzip"' <<<"${raw}" | wc -l) -eq 2 ]] || return 1
}

# unpack NAME BUNDLE: the image unpacked, with the stubs at the module boundary.
unpack() {
  local root="$2/rootfs"
  rm -rf -- "$2"
  umoci unpack --image "${OUT}/$1:$(ref_of "$1")" "$2" >/dev/null
  cp -L /etc/resolv.conf "${root}/etc/resolv.conf"
  mkdir -p -- "${root}/usr/local/sbin" "${root}/sys" "${root}/run/nvidia"
  cat >"${root}/usr/local/sbin/modprobe" <<'EOF'
#!/bin/sh
# stand-in for loading: the real modprobe resolves it (module file, options,
# dependencies) without loading; then it is marked loaded in the chroot's /sys
echo "modprobe $*" >>/stub.log
/usr/sbin/modprobe --dry-run --verbose -S "${KERNEL_VERSION:?}" "$@" >>/stub.log 2>&1 || exit 1
[ -z "${STUB_MODPROBE_FAIL:-}" ] || [ "$1" != "${STUB_MODPROBE_FAIL}" ] || exit 1
m=$(echo "$1" | tr - _)
mkdir -p "/sys/module/${m}"
echo 0 >"/sys/module/${m}/refcnt"
[ "${m}" != nvidia ] || modinfo -F version "/lib/modules/${KERNEL_VERSION}/updates/nvidia-p2p/nvidia.ko" >/sys/module/nvidia/version
EOF
  cat >"${root}/usr/local/sbin/rmmod" <<'EOF'
#!/bin/sh
echo "rmmod $*" >>/stub.log
[ -z "${STUB_RMMOD_FAIL:-}" ] || { echo "rmmod: ERROR: Module $1 is in use" >&2; exit 1; }
rm -rf "/sys/module/$1"
EOF
  chmod 0755 "${root}/usr/local/sbin/modprobe" "${root}/usr/local/sbin/rmmod"
  : >"${root}/stub.log"
}

# in_chroot ROOT ENV... -- ARGS...: nvidia-driver ARGS in ROOT, in a private
# mount namespace with /proc and /dev, the environment only ENV.
in_chroot() {
  local root=$1
  shift
  local -a env=()
  while [[ $1 != -- ]]; do
    env+=("$1")
    shift
  done
  shift
  # shellcheck disable=SC2016 # the inner shell's own $1
  unshare --mount --propagation private -- /bin/sh -c '
    mount -t proc proc "$1/proc" && mount --rbind /dev "$1/dev" || exit 1
    root=$1
    shift
    exec chroot "${root}" "$@"' sh "${root}" /usr/bin/env -i \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin STANDIN_ROOT=/ "${env[@]}" \
    /usr/local/bin/nvidia-driver "$@"
}

ROOT_A=""
INIT_PID=""
INIT_BG=""
init_runs() {
  local t=0
  ROOT_A="${OUT}/a-bundle/rootfs"
  mkdir -p -- "${ROOT_A}/drivers"
  # a kernelModuleConfig file as the operator mounts it (/drivers/nvidia.conf)
  printf '# from the ConfigMap\nNVreg_RegistryDwords="RmP2PTestKey=7"\n\nNVreg_DeviceFileMode=0660\n' >"${ROOT_A}/drivers/nvidia.conf"
  printf 'uvm_perf_prefetch_enable=0\n' >"${ROOT_A}/drivers/nvidia-uvm.conf"
  in_chroot "${ROOT_A}" "KERNEL_VERSION=${KVER}" KERNEL_MODULE_TYPE=open -- init >"${OUT}/init.log" 2>&1 &
  INIT_BG=$!
  until grep -q 'done, now waiting for signal' "${OUT}/init.log"; do
    kill -0 "${INIT_BG}" 2>/dev/null || { tail -n 40 "${OUT}/init.log" && echo "init exited" && return 1; }
    [[ $((t += 5)) -lt ${INIT_TIMEOUT} ]] || { tail -n 40 "${OUT}/init.log" && echo "init timed out" && return 1; }
    sleep 5
  done
  grep -v '^  CC\|^  LD\|^  MODPOST\|^  CONFTEST' "${OUT}/init.log" | tail -n 30
  cat "${ROOT_A}/stub.log"
  # the .run installed the userspace library
  [[ -e ${ROOT_A}/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.${TAG} ]] || return 1
  [[ $(grep '^modprobe ' "${ROOT_A}/stub.log" | paste -sd,) == "modprobe nvidia,modprobe nvidia-uvm,modprobe nvidia-modeset" ]] || return 1
  # init's own pid (no pid namespace): the one in its pid file
  INIT_PID=$(cat "${ROOT_A}/run/nvidia/nvidia-driver.pid")
  [[ ${INIT_PID} =~ ^[0-9]+$ && $(tr '\0' ' ' <"/proc/${INIT_PID}/cmdline") == *"nvidia-driver init"* ]] || return 1
  grep -q ' /run/nvidia/driver ' "/proc/${INIT_PID}/mountinfo" || return 1
}

init_modules() {
  MODULES_DIR="${ROOT_A}/lib/modules"
  local m f
  for m in nvidia nvidia-uvm nvidia-modeset nvidia-drm nvidia-peermem; do
    f="${ROOT_A}/lib/modules/${KVER}/updates/nvidia-p2p/${m}.ko"
    [[ $(modinfo -F version "${f}") == "${TAG}" ]] || { echo "${f}: version" && return 1; }
    [[ $(modinfo -F vermagic "${f}") == "${KVER} "* ]] || { echo "${f}: vermagic" && return 1; }
    echo "${f}: version ${TAG}, vermagic ${KVER}"
  done
  grep -q "insmod /lib/modules/${KVER}/updates/nvidia-p2p/nvidia.ko" "${ROOT_A}/stub.log" || return 1
  # their dependencies resolve to the kernel's own modules, unpacked from its package
  grep -q "insmod /lib/modules/${KVER}/kernel/drivers/gpu/drm/drm.ko" "${ROOT_A}/stub.log" || return 1
  grep -q "insmod /lib/modules/${KVER}/updates/nvidia-p2p/nvidia-modeset.ko" "${ROOT_A}/stub.log" || return 1
}

init_options() {
  local conf="${ROOT_A}/etc/modprobe.d/nvidia-p2p.conf" ours theirs key
  cat "${conf}"
  ours=$(sed -n 's/^options nvidia .*NVreg_RegistryDwords="\([^"]*\)".*/\1/p' "${ROOT_A}/usr/share/nvidia-p2p/nvidia-p2p.conf")
  theirs=$(sed -n 's/^options nvidia .*NVreg_RegistryDwords="\([^"]*\)".*/\1/p' "${conf}")
  [[ -n ${ours} ]] || return 1
  # every key of ours kept, theirs added, the other parameter added
  for key in ${ours//;/ }; do
    [[ ";${theirs};" == *";${key};"* ]] || { echo "lost ${key}" && return 1; }
  done
  [[ ${theirs} == *";RmP2PTestKey=7" ]] || return 1
  grep -q '^options nvidia .* NVreg_DeviceFileMode=0660' "${conf}" || return 1
  grep -q '^options nvidia_uvm uvm_perf_prefetch_enable=0$' "${conf}" || return 1
  # and the real modprobe passed them to the module
  grep -q "insmod /lib/modules/${KVER}/updates/nvidia-p2p/nvidia.ko .*RmP2PTestKey=7" "${ROOT_A}/stub.log" || return 1
}

init_exports() {
  local src="${ROOT_A}/usr/src/nvidia-p2p-${TAG}"
  grep -c . "${src}/Module.symvers"
  grep -q 'nvidia_p2p_get_pages' "${src}/Module.symvers" || return 1
  [[ $(readlink "${ROOT_A}/usr/src/nvidia-${TAG}/kernel-open") == "../nvidia-p2p-${TAG}" ]] || return 1
  # what the node sees through the published root
  grep ' /run/nvidia/driver' "/proc/${INIT_PID}/mountinfo" | head -n 3
}

init_stops() {
  local rc=0 t=0
  kill -TERM "${INIT_PID}"
  while kill -0 "${INIT_PID}" 2>/dev/null; do
    [[ $((t += 1)) -lt 60 ]] || { echo "still running after SIGTERM" && return 1; }
    sleep 1
  done
  wait "${INIT_BG}" || rc=$?
  tail -n 4 "${OUT}/init.log"
  [[ ${rc} -eq 0 ]] || { echo "exit ${rc}" && return 1; }
  [[ $(grep '^rmmod ' "${ROOT_A}/stub.log" | paste -sd,) == "rmmod nvidia_modeset,rmmod nvidia_uvm,rmmod nvidia" ]] || return 1
  [[ ! -e ${ROOT_A}/run/nvidia/nvidia-driver.pid ]] || return 1
  [[ -z $(ls -A "${ROOT_A}/run/nvidia/driver") ]] || return 1
  [[ -z $(ls -A "${ROOT_A}/sys/module") ]] || return 1
}

userspace_real() {
  local smi="${ROOT_A}/usr/bin/nvidia-smi" lib="${ROOT_A}/usr/lib/x86_64-linux-gnu"
  ls -l "${smi}" "${lib}"/libnvidia-ml.so.*
  [[ $(readlink "${lib}/libnvidia-ml.so.1") == "libnvidia-ml.so.${TAG}" ]] || return 1
  [[ $(head -c 4 "${smi}" | od -An -c | tr -d ' ') == 177ELF ]] || return 1
  grep -aq "${TAG}" "${smi}" || return 1
}

# operator_probe: the probe as the operator runs it (the ConfigMap's script
# at /usr/local/bin/startup-probe.sh), with init's daemons status.
operator_probe() {
  cat >"${ROOT_A}/usr/local/bin/nvidia-smi" <<'EOF'
#!/bin/sh
# the startup probe's nvidia-smi: the one call that needs a GPU
echo "nvidia-smi $*" >>/stub.log
echo "nvidia-smi: stub (no GPU here)"
EOF
  chmod 0755 "${ROOT_A}/usr/local/bin/nvidia-smi"
  echo "daemons: $(cat "${ROOT_A}/run/nvidia/validations/.driver-daemons-status")"
  op_probe "${ROOT_A}" chroot || return 1
  cat "${ROOT_A}/run/nvidia/validations/.driver-ctr-ready"
  grep -qx 'GPU_DIRECT_RDMA_ENABLED: false' "${ROOT_A}/run/nvidia/validations/.driver-ctr-ready" || return 1
  rm -f -- "${ROOT_A}/usr/local/bin/nvidia-smi"
}

# operator_validator: the driver validator's search in the published root,
# then its run of that nvidia-smi, outside the root, the library preloaded.
operator_validator() {
  local out lib smi rc=0
  out=$(op_validator_driver "${ROOT_A}") || { echo "${out}" && return 1; }
  echo "${out}"
  lib=$(sed -n 's/^validator: libnvidia-ml.so.1 -> //p' <<<"${out}")
  smi=$(sed -n 's/^validator: nvidia-smi -> //p' <<<"${out}")
  [[ ${lib} == /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.${TAG} && ${smi} == /usr/bin/nvidia-smi ]] || return 1
  out=$(LD_PRELOAD="${ROOT_A}${lib}" "${ROOT_A}${smi}" 2>&1) || rc=$?
  echo "${out} (exit ${rc})"
  # no GPU on this machine: NVML loaded and asked the kernel driver
  [[ ${rc} -eq 0 || (${rc} -eq 9 && ${out} == *"couldn't communicate with the NVIDIA driver"*) ]]
}

operator_prestop() {
  op_prestop "${ROOT_A}" chroot || return 1
  [[ ! -e ${ROOT_A}/run/nvidia/validations/.driver-ctr-ready && ! -e ${ROOT_A}/run/nvidia/validations/.driver-daemons-status ]]
}

# expect_exit CODE ROOT ENV... -- ARGS: nvidia-driver exits CODE.
expect_exit() {
  local code=$1 rc=0
  shift
  in_chroot "$@" || rc=$?
  [[ ${rc} -eq ${code} ]] || { echo "exit ${rc}, expected ${code}" && return 1; }
}

no_headers() {
  : >"${ROOT_A}/stub.log"
  expect_exit 13 "${ROOT_A}" KERNEL_VERSION=6.1.0-999-amd64 -- init 2>&1 | tail -n 3
  [[ ${PIPESTATUS[0]} -eq 0 ]] || return 1
  ! grep -q '^modprobe' "${ROOT_A}/stub.log" || return 1
}

other_driver() {
  : >"${ROOT_A}/stub.log"
  mkdir -p -- "${ROOT_A}/sys/module/nvidia"
  echo 550.163.01 >"${ROOT_A}/sys/module/nvidia/version"
  expect_exit 14 "${ROOT_A}" "KERNEL_VERSION=${KVER}" STUB_RMMOD_FAIL=1 -- init 2>&1 | tail -n 3
  [[ ${PIPESTATUS[0]} -eq 0 ]] || return 1
  ! grep -q '^modprobe' "${ROOT_A}/stub.log" || return 1
  [[ $(cat "${ROOT_A}/sys/module/nvidia/version") == 550.163.01 ]] || return 1
  rm -rf -- "${ROOT_A}/sys/module/nvidia"
}

precompiled_refuses() {
  local root="${OUT}/p-bundle/rootfs"
  unpack p "${OUT}/p-bundle"
  [[ $(ref_of p) == "${TAG%%.*}-${KVER}-debian12" ]] || { echo "reference $(ref_of p)" && return 1; }
  expect_exit 13 "${root}" "KERNEL_VERSION=${KVER2}" -- init 2>&1 | tail -n 3
  [[ ${PIPESTATUS[0]} -eq 0 ]] || return 1
  [[ ! -s ${root}/stub.log ]] || return 1
  [[ ! -e ${root}/lib/modules/${KVER2} ]] || return 1
}

precompiled_loads() {
  local root="${OUT}/p-bundle/rootfs"
  in_chroot "${root}" "KERNEL_VERSION=${KVER}" NVP2P_CTR_WAIT=0 -- init >"${OUT}/init-p.log" 2>&1
  cat "${OUT}/init-p.log"
  grep -q 'modules precompiled for' "${OUT}/init-p.log" || return 1
  # no build, no headers, and the kernel's own modules baked in: nothing fetched
  ! grep -q 'building the five modules\|linux-headers\|apt-get' "${OUT}/init-p.log" || return 1
  grep -q "insmod /lib/modules/${KVER}/kernel/drivers/gpu/drm/drm.ko" "${root}/stub.log" || return 1
  [[ $(grep '^modprobe ' "${root}/stub.log" | paste -sd,) == "modprobe nvidia,modprobe nvidia-uvm,modprobe nvidia-modeset" ]] || return 1
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  main "$@"
fi
