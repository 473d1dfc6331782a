# shellcheck shell=bash
# lib/78-container.sh: `build.sh container`: the patched driver as an OCI
# image that NVIDIA's GPU Operator deploys in place of its own driver image.
#
# Design (docs/kubernetes.md says how it is used, docs/gpu-operator-contract.md
# what the operator expects and where that was read):
# - Two layers. The base: a Debian (or Ubuntu) root file system made by
#   mmdebstrap from the distribution's packages (kmod, make, gcc, libc6-dev,
#   mount, pciutils, ...; apt stays, so init can fetch the node kernel's
#   headers). Ours: the DKMS payload of the tag (kernel-open with the series,
#   the two kernel-independent objects prebuilt: lib/10-payload.sh), the
#   family's module options, NVIDIA's .run (verified against versions.conf or
#   --run-sha256), the entrypoint container/nvidia-driver, image.conf (what
#   the entrypoint reads), and with --precompiled the five modules built and
#   (with --sign-key) signed for that one kernel.
# - No daemon, no registry: umoci assembles the layers into an OCI image
#   layout (it takes plain tar archives and writes the blobs itself, needs
#   neither root nor storage), skopeo checks it and is how it is pushed
#   (skopeo copy oci:DIR:REF docker://...). buildah and podman would need
#   container storage and a runtime to do the same.
# - Reproducible: every timestamp is pkg_epoch's (SOURCE_DATE_EPOCH, by
#   default the commit time of the series' checkout); our layer is a tar
#   with sorted names, numeric owners and normalised modes; the base is made once per
#   recipe (os, mirror, packages, epoch) and kept in the cache with its
#   sha256, so the same inputs give the same layer and manifest digests. A new
#   base (--fresh-base, or an empty cache) takes the archive's packages of
#   the day: its digest then differs, ours does not.
# - The tag the operator asks for: <tag>-<os> (driver.version = <tag>), and
#   for --precompiled <branch>-<kernel>-<os> (driver.version = <branch>,
#   driver.usePrecompiled = true).
# - Labels and annotations: the tag, family, upstream commit and tree pins,
#   the .run's sha256, the series' commit (org.opencontainers.image.revision),
#   the NVLink mode and the precompiled kernel.

readonly CTR_IMAGE="nvidia-p2p-driver"
readonly CTR_PACKAGES="bash,ca-certificates,dwarves,gcc,kmod,libc6-dev,libelf-dev,make,mount,pciutils,util-linux,xz-utils"
# os -> its suite (ctr_sources gives the archive)
declare -grA CTR_SUITE=([debian12]=bookworm [debian13]=trixie [ubuntu22.04]=jammy [ubuntu24.04]=noble)
# os -> packages beside CTR_PACKAGES: Ubuntu 22.04's HWE and cloud kernels are
# built with gcc-12, its gcc is 11 (the entrypoint builds with the kernel's
# compiler, kernel_cc)
declare -grA CTR_EXTRA=([debian12]="" [debian13]="" [ubuntu22.04]=gcc-12 [ubuntu24.04]="")

# The GPU Operator's validator (operator-validator, component cuda) runs a
# CUDA workload that needs a driver of at least a branch: from v26.7.0 it is
# built with CUDA 13.2 and R580 is the oldest branch it supports
# (NVIDIA/gpu-operator eb1b1bee, docker/Dockerfile:15 at v26.7.0 10ee5b36);
# a node whose driver cannot run it never validates. The releases before
# build it with CUDA 11.7.1 (v24.9, v25.3) or 12.9 (v25.10, v26.3): no
# minimum of theirs is checked here. The operator release docs/kubernetes.md
# was last checked against, the default of --operator:
readonly CTR_OPERATOR_CHECKED=26.7.0
readonly CTR_WORKLOAD_FROM=26.7.0
readonly CTR_WORKLOAD_MIN_BRANCH=580

P2P_CTR_OS=debian12
P2P_CTR_OPERATOR=${CTR_OPERATOR_CHECKED}
P2P_CTR_NO_WORKLOAD=0
P2P_CTR_PRECOMPILED=""
P2P_CTR_MIRROR=""
P2P_CTR_FRESH_BASE=0

help_container() {
  usage_synopsis container
  cat <<'EOF'

Build an OCI image of driver <tag> with PCIe P2P that NVIDIA's GPU Operator
deploys in place of its own driver image (docs/kubernetes.md). Its entrypoint
`nvidia-driver init` builds the five modules for the node's kernel (headers
from the image's distribution, fetched by apt at init), installs the
userspace from NVIDIA's .run, writes the P2P module options with the
operator's kernelModuleConfig files on top (theirs win per parameter and per
registry key), loads the modules (nvidia-peermem too with GPUDirect RDMA and
a Mellanox NIC), publishes its root at the host's /run/nvidia/driver, and
unloads on stop. Kernel sources and Module.symvers for out-of-tree modules:
/run/nvidia/driver/usr/src/nvidia-p2p-<tag> on the node.

Made without a daemon or registry: mmdebstrap makes the base from the
distribution's packages (kept in the cache), umoci assembles the image into
the OCI layout DIR (default ./nvidia-p2p-driver), skopeo checks it. Push it
with: skopeo copy oci:DIR:REF docker://REGISTRY/nvidia-p2p-driver:REF
The image reference (REF) is printed on stdout.

Options:
  --os OS           the base and the tag suffix the operator asks for (the
                    nodes' os-release ID and VERSION_ID); default debian12.
                    Ubuntu bases need an Ubuntu mirror (--mirror) and the
                    ubuntu-keyring package; only debian12 was tried here
  --precompiled KVER  build the modules now, for kernel KVER only (its
                    headers installed here, or --kernel-src DIR); the image
                    refuses a node with another kernel; REF is
                    <branch>-KVER-<os> (driver.usePrecompiled)
  --sign-key FILE --sign-cert FILE  sign the precompiled modules (Secure
                    Boot nodes that enrolled the certificate). Images that
                    build at init sign with a key pair mounted at
                    /run/secrets/nvidia-p2p (signing.key, signing.crt)
  --nvlink keep|off as for install (the family's default otherwise)
  --operator VERSION  the GPU Operator release of the cluster (default
                    26.7.0, the one this was checked against). From v26.7.0
                    its validator runs a CUDA 13.2 workload that needs driver
                    branch 580 or newer: an older tag is refused (exit 3)
                    unless --no-validator-workload says the ClusterPolicy
                    sets validator.cuda.env WITH_WORKLOAD=false
  --no-userspace    refused: the operator's startup probe runs nvidia-smi in
                    the driver container, and a node with its own nvidia-smi
                    makes the driver manager disable the driver pod
  --mirror URL      the distribution's archive (default deb.debian.org,
                    archive.ubuntu.com)
  --fresh-base      make the base again even if the cache holds one
  --out DIR         the OCI layout to add the image to
  --source PATH, --run FILE, --run-sha256 HEX, --no-ccache
                    as for fetch and build

Exit codes: as `build.sh help exit-codes`; 3 for an unknown --os, a tag
below the operator validator's branch, or --no-userspace; 8 when mmdebstrap
or umoci fail, 6 when the .run's checksum does not match.
EOF
}

cmd_container() {
  local tag="" ref out base
  parse_stage_args container tag "$@"
  require_tag "${tag}"
  container_check_args "${tag}"
  out=${P2P_OUT:-$(pwd -P)/${CTR_IMAGE}}
  ref=$(container_ref "${tag}")
  cache_lock
  fetch_source "${tag}"
  [[ ${P2P_USERSPACE} == keep ]] || fetch_run "${tag}"
  patch_tree "${tag}" "$(default_patched_dir "${tag}")"
  container_modules "${tag}"
  if [[ ${P2P_DRY_RUN} -eq 1 ]]; then
    printf 'would make the %s base, then assemble oci:%s:%s\n' "${P2P_CTR_OS}" "${out}" "${ref}"
    [[ ${P2P_DRY_PROBLEM} -eq 0 ]] || exit "${P2P_DRY_PROBLEM}"
    return 0
  fi
  base=$(container_base) || exit "$?"
  container_assemble "${tag}" "${ref}" "${out}" "${base}"
  stage finished "oci:${out}:${ref}"
  printf 'oci:%s:%s\n' "${out}" "${ref}"
}

container_check_args() {
  local tag=$1
  [[ -n ${CTR_SUITE[${P2P_CTR_OS}]+x} ]] ||
    die "${EX_UNSUPPORTED}" "--os ${P2P_CTR_OS}: not one of $(printf '%s\n' "${!CTR_SUITE[@]}" | sort | paste -sd ' ')"
  [[ ${P2P_USERSPACE} != keep ]] ||
    die "${EX_UNSUPPORTED}" "--no-userspace: an image without NVIDIA's userspace cannot pass the GPU Operator's startup probe (it runs nvidia-smi inside the driver container), and a node that brings its own nvidia-smi is labelled pre-installed by the driver manager, which then disables the driver pod (docs/kubernetes.md, 'Userspace')"
  container_check_operator "${tag}"
  if [[ -n ${P2P_SIGN_KEY} || -n ${P2P_SIGN_CERT} ]]; then
    [[ -n ${P2P_CTR_PRECOMPILED} ]] ||
      die "${EX_USAGE}" "--sign-key signs modules built now, so with --precompiled only; an image that builds at init signs with a key pair mounted at /run/secrets/nvidia-p2p (docs/kubernetes.md)"
    [[ -n ${P2P_SIGN_KEY} && -n ${P2P_SIGN_CERT} ]] ||
      die "${EX_USAGE}" "--sign-key and --sign-cert go together (the private key and its certificate)"
    sign_check_pair "${P2P_SIGN_KEY}" "${P2P_SIGN_CERT}"
  fi
  [[ -z ${P2P_KERNEL_SRC} || -n ${P2P_CTR_PRECOMPILED} ]] ||
    die "${EX_USAGE}" "--kernel-src is for --precompiled (the headers of that kernel)"
  family_load "${tag}"
  need_cmd umoci umoci
  need_cmd skopeo skopeo
  need_cmd make make
}

# container_check_operator TAG: the tag's branch against the validator's
# minimum of the --operator release (refused, or said loudly with
# --no-validator-workload).
container_check_operator() {
  local branch=${1%%.*}
  if [[ ${P2P_CTR_NO_WORKLOAD} -eq 1 ]] && ! version_le "${CTR_WORKLOAD_FROM}" "${P2P_CTR_OPERATOR}"; then
    die "${EX_USAGE}" "--no-validator-workload is for GPU Operator ${CTR_WORKLOAD_FROM} and later (--operator ${P2P_CTR_OPERATOR} validates ${1} as it is)"
  fi
  version_le "${CTR_WORKLOAD_FROM}" "${P2P_CTR_OPERATOR}" || return 0
  [[ ${branch} -lt ${CTR_WORKLOAD_MIN_BRANCH} ]] || return 0
  if [[ ${P2P_CTR_NO_WORKLOAD} -eq 0 ]]; then
    die "${EX_UNSUPPORTED}" "driver ${1} (branch ${branch}) cannot pass the validator of GPU Operator ${P2P_CTR_OPERATOR}: from ${CTR_WORKLOAD_FROM} its CUDA workload is built with CUDA 13.2 and needs branch ${CTR_WORKLOAD_MIN_BRANCH} or newer, so the node never becomes ready and an operator-driven upgrade leaves it cordoned. Either use a tag of branch ${CTR_WORKLOAD_MIN_BRANCH}+ (build.sh list), or run an operator release before ${CTR_WORKLOAD_FROM} (--operator VERSION), or turn the workload off in the ClusterPolicy (validator.cuda.env: WITH_WORKLOAD=\"false\") and say so with --no-validator-workload"
  fi
  warn "driver ${1} (branch ${branch}) cannot run the CUDA workload of GPU Operator ${P2P_CTR_OPERATOR}'s validator: the ClusterPolicy must set validator.cuda.env WITH_WORKLOAD=\"false\" (--no-validator-workload), or the node never becomes ready"
}

# container_ref TAG: the image reference the operator asks for.
container_ref() {
  if [[ -n ${P2P_CTR_PRECOMPILED} ]]; then
    printf '%s-%s-%s\n' "${1%%.*}" "${P2P_CTR_PRECOMPILED}" "${P2P_CTR_OS}"
  else
    printf '%s-%s\n' "$1" "${P2P_CTR_OS}"
  fi
}

# container_modules TAG: the payload (and with --precompiled the modules of
# that kernel, signed with --sign-key).
container_modules() {
  local tag=$1
  if [[ -n ${P2P_CTR_PRECOMPILED} ]]; then
    # shellcheck disable=SC2034 # P2P_KERNEL: read by resolve_kernel
    [[ -n ${P2P_KERNEL_SRC} ]] || P2P_KERNEL=${P2P_CTR_PRECOMPILED}
    resolve_kernel
    # shellcheck disable=SC2153 # P2P_KREL: set by resolve_kernel
    [[ ${P2P_KREL} == "${P2P_CTR_PRECOMPILED}" ]] ||
      die "${EX_USAGE}" "--kernel-src is kernel ${P2P_KREL}, not --precompiled ${P2P_CTR_PRECOMPILED}"
    build_modules "${tag}"
    [[ -z ${P2P_SIGN_CERT} || ${P2P_DRY_RUN} -eq 1 ]] || sign_modules "${P2P_KREL}" "${P2P_MODULES_DIR}"
  else
    build_objects "${tag}"
    [[ ${P2P_DRY_RUN} -eq 1 ]] ||
      check_endbr "${P2P_OBJECTS_DIR}" "the image links them into modules for the node's kernel, one with IBT (CONFIG_X86_KERNEL_IBT) included"
    make_payload "${tag}" "${P2P_OBJECTS_DIR}"
  fi
}

# series_revision: the commit of the data directory's checkout ("-dirty" when
# the series, patches or versions.conf differ from it), or "unknown".
series_revision() {
  local rev
  rev=$(git -C "${P2P_DATA_DIR}" rev-parse HEAD 2>/dev/null) || { echo unknown && return 0; }
  git -C "${P2P_DATA_DIR}" diff --quiet HEAD -- series patches versions.conf 2>/dev/null || rev+="-dirty"
  printf '%s\n' "${rev}"
}

# --- base ---------------------------------------------------------------------------

# ctr_sources OS: the apt lines of the base (the suite, its updates, security
# and backports: the node's kernel headers may come from any of them, Debian's
# newer kernels from backports).
ctr_sources() {
  local suite=${CTR_SUITE[$1]} m
  case $1 in
  debian*)
    m=${P2P_CTR_MIRROR:-http://deb.debian.org/debian}
    printf 'deb %s %s main\n' "${m}" "${suite}" "${m}" "${suite}-updates"
    printf 'deb %s-security %s-security main\n' "${m}" "${suite}"
    printf 'deb %s %s main\n' "${m}" "${suite}-backports"
    ;;
  ubuntu*)
    m=${P2P_CTR_MIRROR:-http://archive.ubuntu.com/ubuntu}
    printf 'deb %s %s main universe\n' "${m}" "${suite}" "${m}" "${suite}-updates" "${m}" "${suite}-security" \
      "${m}" "${suite}-backports"
    ;;
  esac
}

# ctr_packages OS: the base's packages, comma-separated.
ctr_packages() {
  printf '%s%s\n' "${CTR_PACKAGES}" "${CTR_EXTRA[$1]:+,${CTR_EXTRA[$1]}}"
}

# container_base: the base root file system's tar for --os (made once per
# recipe and kept in the cache, verified by its sha256 before each use).
container_base() {
  local recipe key dir tar
  recipe=$(printf '%s\n' "${P2P_CTR_OS}" "$(ctr_packages "${P2P_CTR_OS}")" "$(pkg_epoch)" && ctr_sources "${P2P_CTR_OS}")
  key=$(sha256sum <<<"${recipe}" | cut -c1-16)
  dir="${P2P_CACHE_DIR}/container"
  tar="${dir}/base-${P2P_CTR_OS}-${key}.tar"
  if [[ ${P2P_CTR_FRESH_BASE} -eq 0 && -r ${tar} && -r ${tar}.sha256 ]]; then
    if [[ $(sha256sum <"${tar}" | cut -d' ' -f1) == "$(cat "${tar}.sha256")" ]]; then
      stage base "${P2P_CTR_OS} from the cache ($(basename "${tar}"))"
      printf '%s\n' "${tar}"
      return 0
    fi
    warn "${tar} does not match its sha256: made again"
  fi
  ctr_make_base "${tar}"
  printf '%s\n' "${tar}"
}

# ctr_make_base TAR: mmdebstrap the base into TAR (via a temporary name).
ctr_make_base() {
  local tar=$1 suite=${CTR_SUITE[${P2P_CTR_OS}]} keyring=() hook pkgs
  # shellcheck disable=SC2016 # $1 is mmdebstrap's: the root being made
  hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/* "$1"/var/log/apt/* "$1"/var/log/dpkg.log "$1"/var/cache/ldconfig/aux-cache'
  local -a mirrors
  need_cmd mmdebstrap mmdebstrap
  mapfile -t mirrors < <(ctr_sources "${P2P_CTR_OS}")
  if [[ ${P2P_CTR_OS} == ubuntu* ]]; then
    [[ -r /usr/share/keyrings/ubuntu-archive-keyring.gpg ]] ||
      die "${EX_PREFLIGHT}" "--os ${P2P_CTR_OS} needs Ubuntu's archive key: apt-get install ubuntu-keyring"
    keyring=(--keyring=/usr/share/keyrings/ubuntu-archive-keyring.gpg)
  fi
  mkdir -p -- "$(dirname "${tar}")"
  pkgs=$(ctr_packages "${P2P_CTR_OS}")
  stage base "mmdebstrap ${suite} (${P2P_CTR_OS}): ${pkgs//,/ } (a few minutes)"
  rm -f -- "${tar}.new"
  SOURCE_DATE_EPOCH=$(pkg_epoch) run_logged mmdebstrap --variant=minbase --format=tar \
    "--include=${pkgs}" "${keyring[@]}" \
    "--customize-hook=${hook}" \
    "${suite}" "${tar}.new" "${mirrors[@]}" ||
    { rm -f -- "${tar}.new" && die "${EX_BUILD}" "mmdebstrap ${suite} failed (its archive reachable? --mirror URL); see ${P2P_LOG_FILE:-the output above}"; }
  sha256sum <"${tar}.new" | cut -d' ' -f1 >"${tar}.sha256"
  mv -f -- "${tar}.new" "${tar}"
}

# --- our layer and the image ----------------------------------------------------------

# container_stage TAG DIR: our layer's files under DIR.
container_stage() {
  local tag=$1 d=$2 m
  install -D -m 0755 -- "$(dirname "${P2P_LIB_DIR}")/container/nvidia-driver" "${d}/usr/local/bin/nvidia-driver"
  mkdir -p -- "${d}/usr/src" "${d}/usr/share/nvidia-p2p" "${d}/drivers"
  cp -a -- "$(payload_dir "${tag}")" "${d}/usr/src/nvidia-p2p-${tag}"
  modprobe_conf_text "${tag}" --container >"${d}/usr/share/nvidia-p2p/nvidia-p2p.conf"
  container_info "${tag}" >"${d}/usr/share/nvidia-p2p/image.conf"
  [[ ! -r ${P2P_PATCHED_DIR}/COPYING ]] ||
    install -D -m 0644 -- "${P2P_PATCHED_DIR}/COPYING" "${d}/usr/share/doc/nvidia-p2p/COPYING.nvidia-open-gpu-kernel-modules"
  [[ ${P2P_USERSPACE} == keep ]] ||
    install -m 0755 -- "${P2P_RUN_PATH}" "${d}/drivers/NVIDIA-Linux-x86_64-${tag}.run"
  if [[ -n ${P2P_CTR_PRECOMPILED} ]]; then
    # what out-of-tree modules link against, from the build of these modules
    install -m 0644 -- "${P2P_MODULES_DIR}/Module.symvers" "${d}/usr/src/nvidia-p2p-${tag}/Module.symvers"
    for m in ${P2P_MODULES}; do
      install -D -m 0644 -- "${P2P_MODULES_DIR}/${m}.ko" "${d}/usr/lib/nvidia-p2p/precompiled/${P2P_CTR_PRECOMPILED}/${m}.ko"
    done
    # under usr/: the base is merged-/usr (/lib -> usr/lib), and a lib/ of
    # this layer would replace that link
    ctr_kernel_deps "${P2P_MODULES_DIR}" "$(ctr_kernel_tree "${P2P_CTR_PRECOMPILED}")" "${d}/usr/lib/modules/${P2P_CTR_PRECOMPILED}"
  fi
}

# ctr_kernel_tree KVER: a directory with kernel KVER's own modules (kernel/,
# modules.order, modules.builtin*): /lib/modules/KVER when that kernel is
# installed here, else the distribution's package of it (Debian's
# linux-image-KVER, Ubuntu's linux-modules-KVER), fetched and verified by apt
# and unpacked into the work directory.
ctr_kernel_tree() {
  local k=$1 dir="${P2P_WORK_DIR}/kernel-${1}" pkg deb src
  if [[ -d ${P2P_ROOT}/lib/modules/${k}/kernel ]]; then
    printf '%s\n' "${P2P_ROOT}/lib/modules/${k}"
    return 0
  fi
  for src in "${dir}/x/lib/modules/${k}" "${dir}/x/usr/lib/modules/${k}"; do
    [[ ! -d ${src}/kernel ]] || { printf '%s\n' "${src}" && return 0; }
  done
  rm -rf -- "${dir}"
  mkdir -p -- "${dir}/x"
  stage kernel "the own modules of kernel ${k} (drm, ib_core...) for the precompiled image: apt-get download"
  for pkg in "linux-image-${k}" "linux-modules-${k}"; do
    (cd "${dir}" && run_logged apt-get -q download "${pkg}") || true
  done
  for deb in "${dir}"/*.deb; do
    [[ -e ${deb} ]] && dpkg-deb -x "${deb}" "${dir}/x"
  done
  for src in "${dir}/x/lib/modules/${k}" "${dir}/x/usr/lib/modules/${k}"; do
    [[ ! -d ${src}/kernel ]] || { printf '%s\n' "${src}" && return 0; }
  done
  die "${EX_FETCH}" "kernel ${k}'s own modules (drm for nvidia-drm, ib_core for nvidia-peermem) are neither installed here (${P2P_ROOT}/lib/modules/${k}/kernel) nor in a package apt can download (linux-image-${k}, linux-modules-${k}): the precompiled image needs them to load without network"
}

# ctr_kernel_deps MODDIR KTREE OUT: the modules of the kernel tree KTREE that
# ours in MODDIR need (their depends, and those modules' depends), copied to
# OUT (the image's /lib/modules/KVER) with KTREE's modules.order and
# modules.builtin*: init then finds them there and fetches nothing.
ctr_kernel_deps() {
  local mods=$1 ktree=$2 out=$3 m dep f rel
  local -a todo=()
  local -A seen=()
  for m in "${mods}"/*.ko; do
    todo+=("${m}")
  done
  while [[ ${#todo[@]} -gt 0 ]]; do
    m=${todo[0]}
    todo=("${todo[@]:1}")
    for dep in $(modinfo -F depends "${m}" 2>/dev/null | tr ',' ' '); do
      dep=${dep//-/_}
      [[ -z ${seen[${dep}]+x} ]] || continue
      seen[${dep}]=1
      [[ ! -e ${mods}/${dep//_/-}.ko && ! -e ${mods}/${dep}.ko ]] || continue
      f=$(find "${ktree}/kernel" -regextype posix-extended -regex ".*/(${dep}|${dep//_/-})\.ko(\.xz|\.zst|\.gz)?" -print -quit)
      [[ -n ${f} ]] || die "${EX_FETCH}" "kernel module ${dep}, which ${m##*/} needs, is not in ${ktree}/kernel"
      rel=${f#"${ktree}/"}
      install -D -m 0644 -- "${f}" "${out}/${rel}"
      todo+=("${f}")
    done
  done
  for f in modules.order modules.builtin modules.builtin.modinfo; do
    [[ ! -r ${ktree}/${f} ]] || install -D -m 0644 -- "${ktree}/${f}" "${out}/${f}"
  done
  mkdir -p -- "${out}/kernel"
}

# container_info TAG: image.conf, what the entrypoint reads (KEY=VALUE).
container_info() {
  local tag=$1
  printf 'tag=%s\nfamily=%s\nos=%s\n' "${tag}" "${V_FAMILY[${tag}]}" "${P2P_CTR_OS}"
  printf 'precompiled=%s\nnvlink=%s\n' "${P2P_CTR_PRECOMPILED}" "$(nvlink_mode "${tag}")"
  printf 'upstream_commit=%s\nupstream_tree=%s\n' "${V_COMMIT[${tag}]}" "${V_TREE[${tag}]}"
  if [[ ${P2P_USERSPACE} == keep ]]; then
    printf 'run_sha256=none\n'
  else
    printf 'run_sha256=%s\n' "$(run_expected_sha "${tag}")"
  fi
  local signed=no workload=on
  [[ -z ${P2P_SIGN_CERT} ]] || signed=yes
  [[ ${P2P_CTR_NO_WORKLOAD} -eq 0 ]] || workload=off
  printf 'series_revision=%s\nsigned=%s\n' "$(series_revision)" "${signed}"
  printf 'operator=%s\nvalidator_workload=%s\n' "${P2P_CTR_OPERATOR}" "${workload}"
  printf 'built_by=build.sh %s\n' "${P2P_VERSION}"
}

# container_layer DIR TAR: DIR as a reproducible tar (sorted names, numeric
# owners, normalised modes, every time SOURCE_DATE_EPOCH).
container_layer() {
  (cd "$1" && find . -mindepth 1 -maxdepth 1 -printf '%P\n' | LC_ALL=C sort) |
    tar -C "$1" --sort=name --mtime="@$(pkg_epoch)" --owner=0 --group=0 --numeric-owner \
      --mode='u+rwX,go+rX,go-w' --format=posix \
      --pax-option='exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime' -cf "$2" -T -
}

# container_assemble TAG REF OUT BASE: the image from BASE and our layer, into
# the OCI layout OUT under REF, checked with skopeo.
container_assemble() {
  local tag=$1 ref=$2 out=$3 base=$4 wdir created
  wdir="${P2P_WORK_DIR}/${tag}/container"
  rm -rf -- "${wdir}"
  mkdir -p -- "${wdir}/stage"
  container_stage "${tag}" "${wdir}/stage"
  container_layer "${wdir}/stage" "${wdir}/layer.tar"
  created=$(date -u -d "@$(pkg_epoch)" +%Y-%m-%dT%H:%M:%SZ)
  stage image "umoci: ${P2P_CTR_OS} base + nvidia-p2p ${tag} as ${ref}"
  if ! ctr_umoci "${tag}" "${wdir}/oci" "${ref}" "${base}" "${wdir}/layer.tar" "${created}" \
    "${wdir}/stage/usr/share/nvidia-p2p/image.conf"; then
    die "${EX_BUILD}" "umoci failed to assemble ${ref}; see ${P2P_LOG_FILE:-the output above}"
  fi
  container_check "${tag}" "${wdir}/oci:${ref}"
  mkdir -p -- "${out}"
  run_logged skopeo copy --quiet --preserve-digests "oci:${wdir}/oci:${ref}" "oci:${out}:${ref}" ||
    die "${EX_BUILD}" "skopeo could not copy ${ref} into ${out}"
}

# ctr_umoci TAG LAYOUT REF BASE LAYER CREATED INFO: umoci's steps (status 1
# on failure); INFO is the layer's image.conf, the labels' source.
ctr_umoci() {
  local tag=$1 layout=$2 ref=$3 created=$6
  run_logged umoci init --layout "${layout}" &&
    run_logged umoci new --image "${layout}:${ref}" &&
    ctr_add_layer "${layout}:${ref}" "$4" "${created}" "mmdebstrap ${CTR_SUITE[${P2P_CTR_OS}]} $(ctr_packages "${P2P_CTR_OS}")" &&
    ctr_add_layer "${layout}:${ref}" "$5" "${created}" "build.sh ${P2P_VERSION} container ${tag}" &&
    container_config "${tag}" "${layout}:${ref}" "${created}" "$7" &&
    run_logged umoci gc --layout "${layout}"
}

ctr_add_layer() {
  run_logged umoci raw add-layer --image "$1" --history.created "$3" --history.created_by "$4" "$2"
}

# container_config TAG IMAGE CREATED INFO: entrypoint, environment, labels.
container_config() {
  local tag=$1 image=$2 created=$3 k v
  local -a args=(--image "${image}" --created "${created}" --history.created "${created}"
    --history.created_by "build.sh container ${tag}" --os linux --architecture amd64
    --config.entrypoint /usr/local/bin/nvidia-driver --config.cmd init --config.workingdir /drivers
    --config.env "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    --config.env "DRIVER_VERSION=${tag}" --config.env "DRIVER_BRANCH=${tag%%.*}"
    --config.env "NVIDIA_VISIBLE_DEVICES=void" --config.env "DEBIAN_FRONTEND=noninteractive"
    --config.stopsignal SIGTERM)
  while IFS='=' read -r k v; do
    args+=(--config.label "${k}=${v}" --manifest.annotation "${k}=${v}")
  done < <(container_labels "${tag}" "${created}" "$4")
  run_logged umoci config "${args[@]}"
}

# container_labels TAG CREATED INFO: the labels (and annotations), KEY=VALUE;
# the image's own ones from INFO, its image.conf.
container_labels() {
  local tag=$1
  printf 'org.opencontainers.image.title=%s\n' "${CTR_IMAGE}"
  printf 'org.opencontainers.image.description=NVIDIA open kernel modules %s with the nvidia-p2p PCIe P2P series, for the GPU Operator\n' "${tag}"
  printf 'org.opencontainers.image.version=%s\n' "${tag}"
  printf 'org.opencontainers.image.revision=%s\n' "$(sed -n 's/^series_revision=//p' "$3")"
  printf 'org.opencontainers.image.created=%s\n' "$2"
  printf 'org.opencontainers.image.licenses=MIT OR GPL-2.0-only\n'
  local k v
  while IFS='=' read -r k v; do
    case ${k} in
    family | os | precompiled | nvlink | upstream_commit | upstream_tree | run_sha256 | signed | operator | validator_workload)
      [[ -n ${v} ]] || continue
      printf 'nvidia-p2p.%s=%s\n' "${k//_/-}" "${v}"
      ;;
    esac
  done <"$3"
}

# container_check TAG IMAGE: skopeo reads the image back: its entrypoint,
# version label and two layers.
container_check() {
  local json
  json=$(skopeo inspect --config "oci:$2") || die "${EX_BUILD}" "skopeo cannot read $2"
  if ! grep -q '"org.opencontainers.image.version": *"'"$1"'"' <<<"${json}" ||
    ! grep -q '"/usr/local/bin/nvidia-driver"' <<<"${json}"; then
    die "${EX_BUILD}" "$2: its configuration lacks the entrypoint or the version label"
  fi
  [[ $(skopeo inspect "oci:$2" | grep -c '"sha256:') -ge 2 ]] ||
    die "${EX_BUILD}" "$2: fewer than two layers"
}
