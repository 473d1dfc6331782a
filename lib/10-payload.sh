# shellcheck shell=bash
# lib/10-payload.sh: the DKMS payload: the patched tree with the two
# kernel-independent objects prebuilt, and its dkms.conf. Install, package
# and container ship it.

readonly DKMS_MODULE="nvidia-p2p"
# Where DKMS installs modules on Debian and Ubuntu (its DEST_MODULE_LOCATION
# is overridden there; dkms.conf asks for the same place elsewhere).
readonly DKMS_DEST="updates/dkms"

payload_dir() { printf '%s/%s/dkms-src\n' "${P2P_WORK_DIR}" "$1"; }

# write_dkms_conf TAG: dkms.conf for the payload, on stdout. Works with
# dkms 3.0.10 (Debian 12) and newer: no BUILD_EXCLUSIVE_CONFIG/_MIN/_MAX.
# 'make' is quoted so that dkms appends no KERNELRELEASE= (kernel-open's
# Makefile takes KERNEL_UNAME and finds /lib/modules/<kver>/{build,source},
# which Debian's split headers need); CLEAN="true" because kernel-open's
# `make clean` would look for the running kernel's headers. For a kernel
# built with clang (CachyOS's), MAKE adds LLVM=1 and IGNORE_CC_MISMATCH=1
# (kernel-open's compiler check compares with __GNUC__, 4 for clang), and
# LD=ld.lld where it was linked with lld: kernel-open/Makefile passes its own LD (GNU ld) to kbuild,
# which cannot link the LTO objects of such a kernel (dkms 3.1.2 and later add
# LLVM=1 by themselves, not LD). The sed runs when DKMS reads this file, for
# the kernel it builds for; it prints nothing for a gcc-built kernel.
# NO_WEAK_MODULES: where weak-modules exists (RHEL, SUSE), it must not link
# these modules into other kernels: DKMS builds them for each.
write_dkms_conf() {
  local tag=$1 i=0 m
  cat <<EOF
# dkms.conf for ${DKMS_MODULE} ${tag} (family ${V_FAMILY[${tag}]}), written by
# nvidia-p2p build.sh ${P2P_VERSION}: NVIDIA's open kernel modules with the
# PCIe P2P series, nv-kernel.o and nv-modeset-kernel.o prebuilt from the
# patched source (kernel-independent), kernel-open built by DKMS per kernel.
PACKAGE_NAME="${DKMS_MODULE}"
PACKAGE_VERSION="${tag}"
AUTOINSTALL="yes"
MAKE[0]="'make' \${parallel_jobs+-j\$parallel_jobs} NV_EXCLUDE_BUILD_MODULES='' KERNEL_UNAME=\${kernelver} \$(sed -n -e 's/^CONFIG_CC_IS_CLANG=y\$/LLVM=1 IGNORE_CC_MISMATCH=1/p' -e 's/^CONFIG_LD_IS_LLD=y\$/LD=ld.lld/p' /lib/modules/\${kernelver}/build/.config 2>/dev/null | tr '\\n' ' ') modules"
CLEAN="true"
NO_WEAK_MODULES="yes"
EOF
  for m in ${P2P_MODULES}; do
    printf 'BUILT_MODULE_NAME[%d]="%s"\n' "${i}" "${m}"
    printf 'BUILT_MODULE_LOCATION[%d]="./"\n' "${i}"
    printf 'DEST_MODULE_LOCATION[%d]="/%s"\n' "${i}" "${DKMS_DEST}"
    i=$((i + 1))
  done
}

# payload_files TAG OBJDIR NEW: what make_payload puts into NEW (for
# run_captured: a failure stops it, with the output of what failed).
payload_files() {
  local tag=$1 objdir=$2 new=$3
  cp -a -- "${P2P_PATCHED_DIR}/kernel-open" "${new}" &&
    rm -f -- "${new}/nvidia/nv-kernel.o_binary" "${new}/nvidia-modeset/nv-modeset-kernel.o_binary" &&
    install -D -m 0644 -- "${objdir}/src/nvidia/_out/Linux_x86_64/nv-kernel.o" "${new}/nvidia/nv-kernel.o_binary" &&
    install -D -m 0644 -- "${objdir}/src/nvidia-modeset/_out/Linux_x86_64/nv-modeset-kernel.o" \
      "${new}/nvidia-modeset/nv-modeset-kernel.o_binary" &&
    write_dkms_conf "${tag}" >"${new}/dkms.conf"
}

# make_payload TAG OBJDIR: <work>/<tag>/dkms-src: kernel-open of the patched
# tree, the two objects from OBJDIR as regular files, and dkms.conf.
make_payload() {
  local tag=$1 objdir=$2 dir new
  dir=$(payload_dir "${tag}")
  stage payload "DKMS source of ${tag}: kernel-open + nv-kernel.o_binary + nv-modeset-kernel.o_binary"
  if [[ ${P2P_DRY_RUN} -eq 1 ]]; then
    printf 'would assemble %s from %s/kernel-open and the objects in %s\n' "${dir}" "${P2P_PATCHED_DIR}" "${objdir}"
    return 0
  fi
  new="${dir}.new"
  rm -rf -- "${new}"
  run_captured payload_files "${tag}" "${objdir}" "${new}" ||
    write_failed "${new}" "assembling the DKMS source" "${EX_BUILD}" "cannot assemble ${new}" "${new}"
  rm -rf -- "${dir}"
  mv -- "${new}" "${dir}"
  verbose "payload ${dir}: $(du -sh "${dir}" | cut -f1)"
}
