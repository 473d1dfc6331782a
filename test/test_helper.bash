# shellcheck shell=bash
# test/test_helper.bash: hermetic setup for the bats suites. Each test gets a
# temporary HOME, cache, work dir and install root, a stub directory first on
# PATH, and (make_fixture) a small fake upstream: a git repository with a tag,
# its GitHub-style and release-style tarballs, a patch family for it, a
# versions.conf pinning it, and a stand-in .run installer. No root, no network.

bats_load_library bats-support
bats_load_library bats-assert
bats_load_library bats-file

REPO_ROOT="$(cd "${BATS_TEST_DIRNAME}/../.." && pwd -P)"
BUILD_SH="${REPO_ROOT}/build.sh"
FIXTURE_TAG="999.10.01"
FIXTURE_KREL="6.1.0-99-test"

common_setup() {
  common_env "${BATS_TEST_TMPDIR}"
  common_dirs
}

# common_env BASE: the test's environment, its directories under BASE
# (TEST_BASE).
common_env() {
  export TEST_BASE=$1
  export HOME="$1/home"
  unset XDG_CACHE_HOME NVP2P_DATA_DIR NVP2P_SYSFS CCACHE_DIR
  export NO_COLOR=1 LC_ALL=C
  # doctor (preflight, the pipeline) reads procfs here, an empty tree unless
  # a test fills it, and uses one p2p-doctor built per bats run
  export NVP2P_PROCFS="$1/proc"
  export NVP2P_DOCTOR_BIN="${BATS_RUN_TMPDIR}/p2p-doctor"
  STUBS="$1/stubs"
  export PATH="${STUBS}:${PATH}"
  export STUB_LOG="$1/stub.log"
  CACHE="$1/cache"
  WORK="$1/work"
  ROOT="$1/root"
  export CACHE WORK ROOT
}

# common_dirs: the directories of common_env, and an empty stub log; the
# machine facts doctor collects come from silent stand-ins (a test that needs
# them says what they print), and its reader is built once per run.
common_dirs() {
  mkdir -p "${HOME}" "${STUBS}" "${ROOT}"
  : >"${STUB_LOG}"
  local name
  for name in lspci dmesg journalctl nvidia-smi; do
    printf '#!/bin/sh\nexit 0\n' >"${STUBS}/${name}"
    chmod +x "${STUBS}/${name}"
  done
  doctor_bin
}

# doctor_bin: verify/p2p-doctor built into $NVP2P_DOCTOR_BIN, once per run.
doctor_bin() {
  [[ -x ${NVP2P_DOCTOR_BIN} ]] && return 0
  (
    flock 9
    [[ -x ${NVP2P_DOCTOR_BIN} ]] || make -s -C "${REPO_ROOT}/verify" doctor DOCTOR_BIN="${NVP2P_DOCTOR_BIN}" >&2
  ) 9>"${NVP2P_DOCTOR_BIN}.lock"
}

# prepared_setup ENV_FN STATE_FN: common_setup and make_fixture in a fixed
# directory of the test file, then ENV_FN (variables, every test) and, once
# per file, STATE_FN (files: e.g. a fetch and a build), whose result is kept
# and copied back for each later test. The paths stay the same, so build
# stamps stay valid, and each test starts from the same files (stub log
# included) as if STATE_FN had run for it.
prepared_setup() {
  local base="${BATS_FILE_TMPDIR}/prepared" snap="${BATS_FILE_TMPDIR}/prepared.snap"
  common_env "${base}"
  fixture_env "${base}"
  "$1"
  rm -rf "${base}"
  if [[ -d ${snap} ]]; then
    cp -a "${snap}" "${base}"
    return 0
  fi
  common_dirs
  fixture_state "${base}"
  "$2"
  cp -a "${base}" "${snap}"
}

# gsp_firmware TAG: the GSP firmware files of TAG under ROOT, where the .run
# and Debian's firmware-nvidia-gsp put them.
gsp_firmware() {
  mkdir -p "${ROOT}/lib/firmware/nvidia/$1"
  : >"${ROOT}/lib/firmware/nvidia/$1/gsp_ga10x.bin"
  : >"${ROOT}/lib/firmware/nvidia/$1/gsp_tu10x.bin"
}

# stub NAME [-]: an executable NAME first on PATH that records its arguments
# in $STUB_LOG; with "-", the rest of its body (bash) is read from stdin
# (a quoted heredoc), else it succeeds.
stub() {
  local name=$1 body=""
  [[ ${2:-} == - ]] && body=$(cat)
  {
    cat <<STUBHEAD
#!/usr/bin/env bash
printf '%s %s\n' $(printf '%q' "${name}") "\$*" >>"\${STUB_LOG}"
STUBHEAD
    printf '%s\n' "${body}"
  } >"${STUBS}/${name}"
  chmod +x "${STUBS}/${name}"
}

# unstub_path NAME: a PATH without any directory that has NAME (keeps stubs).
path_without() {
  local name=$1 dir out=""
  local -a dirs
  IFS=: read -r -a dirs <<<"${PATH}"
  for dir in "${dirs[@]}"; do
    if [[ ${dir} != "${STUBS}" && -x ${dir}/${name} ]]; then
      continue
    fi
    out+="${out:+:}${dir}"
  done
  printf '%s\n' "${out}"
}

# path_hiding NAME...: a PATH where the commands NAME... are not found but
# every other command is (a directory of links to the real ones; stubs first),
# one directory per set of NAMEs (a test may hide one, then two).
path_hiding() {
  local dir="${BATS_TEST_TMPDIR}/path-hiding" d f name
  dir+=$(printf -- '-%s' "$@")
  local -a dirs=()
  local -A hide=()
  for name in "$@"; do hide[${name}]=1; done
  mkdir -p "${dir}"
  IFS=: read -r -a dirs <<<"${PATH}"
  for d in "${dirs[@]}"; do
    [[ ${d} == "${STUBS}" ]] && continue
    for f in "${d}"/*; do
      name=${f##*/}
      [[ -x ${f} && -z ${hide[${name}]+x} && ! -e ${dir}/${name} ]] && ln -s "${f}" "${dir}/${name}"
    done
  done
  printf '%s:%s\n' "${STUBS}" "${dir}"
}

# run_build ARGS...: build.sh with the test's cache and work dirs.
run_build() {
  run "${BUILD_SH}" --cache-dir "${CACHE}" --work-dir "${WORK}" "$@"
}

# fetch_and_build: the fixture tag fetched (source and stand-in .run) and
# built for the fixture kernel, with ROOT as the install root.
fetch_and_build() {
  run_build --root "${ROOT}" fetch "${FIXTURE_TAG}" --source "${FIX}/upstream" --run "${FIX}/NVIDIA-Linux-x86_64-${FIXTURE_TAG}.run"
  assert_success
  run_build --root "${ROOT}" build "${FIXTURE_TAG}" --no-ccache
  assert_success
}

# rerecord_patched DIR: the manifest of the patched tree DIR recorded again
# from its content, for a test that edits the tree to stand in for upstream
# content (a tree changed since it was patched is refused).
rerecord_patched() {
  bash -c 'source "$1" && tree_manifest "$2" >"$3" && mv -- "$3" "$2/${PATCHED_MANIFEST}"' _ \
    "${BUILD_SH}" "$1" "${BATS_TEST_TMPDIR}/manifest.new"
}

# as_user: make `id -u` report a normal user for the rest of the test.
as_user() {
  stub id - <<'STUB'
case "$1" in -u) echo 1000 ;; -un) echo tester ;; *) echo "uid=1000(tester)" ;; esac
STUB
}

# as_root: make `id -u` report root (the test machine's real uid is irrelevant).
as_root() {
  stub id - <<'STUB'
case "$1" in -u) echo 0 ;; -un) echo root ;; *) echo "uid=0(root)" ;; esac
STUB
}

# use_data_dir DIR: point build.sh at data (versions.conf, series, patches)
# in DIR for the rest of the test.
use_data_dir() {
  export NVP2P_DATA_DIR=$1
  mkdir -p "$1"
}

# --- fixture upstream ---------------------------------------------------------

# make_fixture: build (once per test file) the fake upstream and data dir, then
# point build.sh at the data with NVP2P_DATA_DIR.
make_fixture() {
  fixture_env "${BATS_TEST_TMPDIR}"
  fixture_state "${BATS_TEST_TMPDIR}"
}

# fixture_env BASE: FIX (the fake upstream) and NVP2P_DATA_DIR (BASE/data).
fixture_env() {
  export FIX="${BATS_FILE_TMPDIR}/fixture"
  export NVP2P_DATA_DIR="$1/data" FIXTURE_TAG FIXTURE_KREL
}

# fixture_state BASE: the fake upstream (once per file), its data copied to
# BASE/data, the fixture kernel under ROOT, the build stubs.
fixture_state() {
  if [[ ! -f ${FIX}/.done ]]; then
    fixture_build "${FIX}" >"${BATS_FILE_TMPDIR}/fixture.log" 2>&1
  fi
  rm -rf "$1/data"
  cp -a "${FIX}/data" "$1/data"
  use_data_dir "$1/data"
  fixture_kernel "${ROOT}" "${FIXTURE_KREL}"
  # The running kernel has its image installed, not only headers.
  printf 'kernel/fake/builtin.ko\n' >"${ROOT}/lib/modules/${FIXTURE_KREL}/modules.builtin"
  fixture_build_stubs
}

fixture_build() {
  local fix=$1 tag=${FIXTURE_TAG} tree core commit src
  rm -rf "${fix}"
  mkdir -p "${fix}"
  src="${fix}/upstream"
  mkdir -p "${src}/kernel-open/nvidia" "${src}/src/nvidia" "${src}/.github"
  printf 'obj-m := nvidia.o\n' >"${src}/kernel-open/Makefile"
  printf '#!/bin/sh\necho conftest\n' >"${src}/kernel-open/conftest.sh"
  chmod +x "${src}/kernel-open/conftest.sh"
  printf 'int nv_resize(void)\n{\n    return pci_resize_resource(0, 1, 2);\n}\n' >"${src}/kernel-open/nvidia/nv-pci.c"
  printf 'int kbus(int type)\n{\n    if (type == 1)\n        return mailbox();\n    return -1;\n}\n' >"${src}/src/nvidia/kern_bus.c"
  # What rebase's mechanism check follows: kbus(), which the route patch
  # changes, is called from p2p_caps.c, where the registry key is read.
  mkdir -p "${src}/src/nvidia/interface"
  printf '#define NV_REG_STR_RM_FORCE_P2P_TYPE "RMForceP2PType"\n#define NV_REG_STR_RM_FORCE_P2P_TYPE_BAR1P2P 0x00000002\n' \
    >"${src}/src/nvidia/interface/nvrm_registry.h"
  printf '#include "interface/nvrm_registry.h"\nint p2p_caps(void)\n{\n    return kbus(regRead(NV_REG_STR_RM_FORCE_P2P_TYPE));\n}\n' \
    >"${src}/src/nvidia/p2p_caps.c"
  printf 'modules:\n\t@echo building\n' >"${src}/Makefile"
  printf 'NVIDIA_VERSION = %s\n' "${tag}" >"${src}/version.mk"
  printf 'issue template\n' >"${src}/.github/ISSUE.md"
  printf 'The fixture is under MIT or GPL-2.0, as upstream.\n' >"${src}/COPYING"
  printf '# Changelog (git)\n' >"${src}/CHANGELOG.md"
  git -C "${src}" init -q
  git -C "${src}" -c user.name=t -c user.email=t@t add -A
  git -C "${src}" -c user.name=t -c user.email=t@t commit -q -m "${tag}"
  git -C "${src}" -c user.name=t -c user.email=t@t tag -a -m "${tag}" "${tag}"
  commit=$(git -C "${src}" rev-parse HEAD)
  tree=$(git -C "${src}" rev-parse 'HEAD^{tree}')
  core=$(git -C "${src}" ls-tree HEAD | grep -v -E $'\t(\\.github|CHANGELOG\\.md)$' | git -C "${src}" mktree)
  # GitHub-style archive, and a release tarball (no .github, other CHANGELOG).
  git -C "${src}" archive --format=tar.gz --prefix="open-gpu-kernel-modules-${commit}/" -o "${fix}/github.tar.gz" HEAD
  mkdir -p "${fix}/rel/NVIDIA-kernel-module-source-${tag}"
  git -C "${src}" archive HEAD | tar -x -C "${fix}/rel/NVIDIA-kernel-module-source-${tag}"
  rm -rf "${fix}/rel/NVIDIA-kernel-module-source-${tag}/.github"
  printf '# Changelog (release)\n' >"${fix}/rel/NVIDIA-kernel-module-source-${tag}/CHANGELOG.md"
  tar -C "${fix}/rel" -cJf "${fix}/release.tar.xz" "NVIDIA-kernel-module-source-${tag}"
  fixture_data "${fix}" "${tag}" "${commit}" "${tree}" "${core}"
  touch "${fix}/.done"
}

# fixture_data FIX TAG COMMIT TREE CORE: series, a family with two patches
# made with diff, modprobe.conf, the stand-in .run and versions.conf.
fixture_data() {
  local fix=$1 tag=$2 commit=$3 tree=$4 core=$5 data a b run sha
  data="${fix}/data"
  mkdir -p "${data}/patches/999"
  printf '# fixture series\ncompat-0001-resize.patch\np2p-0001-route.patch\n' >"${data}/series"
  a="${fix}/a"
  b="${fix}/b"
  mkdir -p "${a}" "${b}"
  git -C "${fix}/upstream" archive HEAD | tar -x -C "${a}"
  cp -a "${a}/." "${b}/"
  sed -i 's/pci_resize_resource(0, 1, 2)/pci_resize_resource(0, 1, 2, 0)/' "${b}/kernel-open/nvidia/nv-pci.c"
  fixture_patch "${fix}" kernel-open/nvidia/nv-pci.c "Kernel compat fixture" >"${data}/patches/999/compat-0001-resize.patch"
  cp "${b}/kernel-open/nvidia/nv-pci.c" "${a}/kernel-open/nvidia/nv-pci.c"
  sed -i 's/        return mailbox();/        return mailbox();\n    if (type == 2)\n        return bar1();/' "${b}/src/nvidia/kern_bus.c"
  fixture_patch "${fix}" src/nvidia/kern_bus.c "Route fixture" >"${data}/patches/999/p2p-0001-route.patch"
  {
    printf '# requires: src/nvidia/interface/nvrm_registry.h NV_REG_STR_RM_FORCE_P2P_TYPE_BAR1P2P 0x00000002\n'
    printf 'options nvidia NVreg_RegistryDwords="RMForceP2PType=2"\n'
  } >"${data}/patches/999/modprobe.conf"
  run="${fix}/NVIDIA-Linux-x86_64-${tag}.run"
  sed "s/@VERSION@/${tag}/" "${BATS_TEST_DIRNAME}/../fixtures/standin.run.in" >"${run}"
  chmod +x "${run}"
  sha=$(sha256sum "${run}" | cut -d' ' -f1)
  {
    printf '# fixture versions.conf\n'
    printf '%s 999 %s %s %s %s https://example.invalid/NVIDIA-Linux-x86_64-%s.run apply\n' \
      "${tag}" "${commit}" "${tree}" "${core}" "${sha}" "${tag}"
    printf '999.20.01 999 %s %s %s unknown https://example.invalid/NVIDIA-Linux-x86_64-999.20.01.run -\n' \
      "${commit}" "${tree}" "${core}"
  } >"${data}/versions.conf"
}

fixture_patch() {
  local fix=$1 file=$2 desc=$3
  printf 'Description: %s\nAuthor: tests\nForwarded: not-needed\nLast-Update: 2026-11-20\n' "${desc}"
  (cd "${fix}" && diff -u --label "a/${file}" --label "b/${file}" "a/${file}" "b/${file}") || true
}

# fixture_release GIT TAG [SED [FILE]]: a later upstream release in the bare
# repository GIT: the fixture tree with version.mk saying TAG and the sed
# script SED applied to FILE (default src/nvidia/kern_bus.c), committed and
# tagged TAG.
fixture_release() {
  local git=$1 tag=$2 script=${3:-} file=${4:-src/nvidia/kern_bus.c} wt
  wt=$(mktemp -d "${BATS_TEST_TMPDIR}/wt.XXXXXX")
  git clone -q "${git}" "${wt}"
  git -C "${wt}" checkout -q "${FIXTURE_TAG}"
  printf 'NVIDIA_VERSION = %s\n' "${tag}" >"${wt}/version.mk"
  [[ -z ${script} ]] || sed -i -e "${script}" "${wt}/${file}"
  git -C "${wt}" -c user.name=t -c user.email=t@t commit -q -a -m "${tag}"
  git -C "${wt}" -c user.name=t -c user.email=t@t tag -a -m "${tag}" "${tag}"
  git -C "${wt}" push -q origin "refs/tags/${tag}"
  rm -rf "${wt}"
}

# chroot_standin KREL: BATS_TEST_TMPDIR/chroot-standin, a stand-in for
# ci/setup/chroot.sh: "kernel" reports KREL, "run" runs the command on the host
# (build.sh with --root ROOT, where the fixture has the headers).
chroot_standin() {
  {
    printf '#!/usr/bin/env bash\nkrel=%q\n' "$1"
    cat <<'STUB'
printf 'chroot.sh %s\n' "$*" >>"${STUB_LOG}"
case $1 in
kernel) echo "${krel}" ;;
run)
  shift 3
  while [[ $1 != -- ]]; do shift; done
  shift
  args=()
  for a in "$@"; do
    args+=("${a}")
    [[ ${a} == */build.sh ]] && args+=(--root "${ROOT}")
  done
  exec "${args[@]}"
  ;;
esac
STUB
  } >"${BATS_TEST_TMPDIR}/chroot-standin"
  chmod +x "${BATS_TEST_TMPDIR}/chroot-standin"
}

# fixture_kernel ROOT KREL: installed "headers" for KREL under ROOT.
fixture_kernel() {
  local root=$1 krel=$2 hdr
  hdr="${root}/usr/src/linux-headers-${krel}"
  mkdir -p "${hdr}/include/config" "${root}/lib/modules/${krel}/kernel"
  printf 'include %s/Makefile\n' "${root}/usr/src/linux-headers-common" >"${hdr}/Makefile"
  printf '%s\n' "${krel}" >"${hdr}/include/config/kernel.release"
  mkdir -p "${root}/usr/src/linux-headers-common"
  printf '# common\n' >"${root}/usr/src/linux-headers-common/Makefile"
  ln -sfn "${hdr}" "${root}/lib/modules/${krel}/build"
  ln -sfn "${root}/usr/src/linux-headers-common" "${root}/lib/modules/${krel}/source"
}

# fixture_build_stubs: make that "builds" five text .ko files, modinfo that
# reads them, and the install-side tools (depmod, update-initramfs, strip).
fixture_build_stubs() {
  export FIXTURE_TAG FIXTURE_KREL
  stub make - <<'STUB'
dir="" krel="" version="${FAKE_KO_VERSION:-${FIXTURE_TAG}}"
[[ " $* " == *" clean "* ]] && exit 0
# Single-object targets (build --units-only): succeed unless FAKE_UNIT_FAIL names one.
# A kbuild one (M=) "runs the conftests" unless their results are there already.
for a in "$@"; do
  if [[ ${a} == M=* && ! -f ${a#M=}/conftest/headers.h ]]; then
    echo "conftests ran" >>"${STUB_LOG}"
    mkdir -p "${a#M=}/conftest/compile-tests"
    echo '#define NV_FAKE_PRESENT' >"${a#M=}/conftest/compile-tests/fake.h"
    cat "${a#M=}/conftest/compile-tests/fake.h" >"${a#M=}/conftest/headers.h"
  fi
  [[ ${a} == *.o ]] || continue
  if [[ -n ${FAKE_UNIT_FAIL:-} && ${a} == *"${FAKE_UNIT_FAIL}"* ]]; then
    echo "${a%.o}.c:1:1: error: fake unit failure" >&2
    exit 2
  fi
  units=1
done
[[ -n ${units:-} ]] && exit 0
# The kernel-independent objects alone (package): upstream's .o_binary targets.
if [[ " $* " == *".o_binary "* ]]; then
  while [[ $# -gt 0 ]]; do [[ $1 == -C ]] && dir=$2; shift; done
  [[ -n ${FAKE_OBJECTS_FAIL:-} ]] && { echo "nv.c:1: error: fake object failure" >&2; exit 2; }
  mkdir -p "${dir}/src/nvidia/_out/Linux_x86_64" "${dir}/src/nvidia-modeset/_out/Linux_x86_64"
  printf 'nv-kernel.o %s\n' "${version}" >"${dir}/src/nvidia/_out/Linux_x86_64/nv-kernel.o"
  printf 'nv-modeset-kernel.o %s\n' "${version}" >"${dir}/src/nvidia-modeset/_out/Linux_x86_64/nv-modeset-kernel.o"
  exit 0
fi
while [[ $# -gt 0 ]]; do
  case $1 in
  -C) dir=$2; shift ;;
  SYSOUT=*)
    krel=$(sed -n 's/^#define UTS_RELEASE "\(.*\)"/\1/p' "${1#SYSOUT=}/include/generated/utsrelease.h" 2>/dev/null)
    [[ -n ${krel} ]] || krel=$(cat "${1#SYSOUT=}/include/config/kernel.release")
    ;;
  esac
  shift
done
[[ -n ${FAKE_MAKE_FAIL:-} ]] && { echo "nv.c:1: error: fake failure" >&2; exit 2; }
# FAKE_MAKE_PROGRESS=1: a slow build, with make's and kbuild's kinds of lines.
if [[ -n ${FAKE_MAKE_PROGRESS:-} ]]; then
  echo "make[1]: Entering directory '${dir}/src/nvidia'"
  echo "   CC           src/kernel/gpu/bus/kern_bus.c"
  sleep 2
  echo "make[1]: Leaving directory '${dir}/src/nvidia'"
  echo "make[1]: Entering directory '/usr/src/linux-headers-${krel}'"
  echo "  CC [M]  ${dir}/kernel-open/nvidia-uvm/uvm_va_space.o"
  sleep 2
fi
# FAKE_KO_VERSION=from-path: the version is the tag in the tree's path (WORK/TAG/...).
[[ ${version} == from-path ]] && version=$(grep -oE '/[0-9]+\.[0-9]+(\.[0-9]+)?/' <<<"${dir}/" | tail -n 1 | tr -d /)
for m in nvidia nvidia-uvm nvidia-modeset nvidia-drm nvidia-peermem; do
  printf "version=%s\nvermagic=%s SMP mod_unload\n" "${version}" "${FAKE_KO_KREL:-${krel}}" >"${dir}/kernel-open/${m}.ko"
done
printf '0x00000000\tnvidia_p2p_get_pages\t%s/kernel-open/nvidia\tEXPORT_SYMBOL\t\n' "${dir}" >"${dir}/kernel-open/Module.symvers"
mkdir -p "${dir}/src/nvidia/_out/Linux_x86_64" "${dir}/src/nvidia-modeset/_out/Linux_x86_64"
printf 'nv-kernel.o %s\n' "${version}" >"${dir}/src/nvidia/_out/Linux_x86_64/nv-kernel.o"
printf 'nv-modeset-kernel.o %s\n' "${version}" >"${dir}/src/nvidia-modeset/_out/Linux_x86_64/nv-modeset-kernel.o"
STUB
  # objdump -d of the kernel-independent objects: ENDBR64 landing pads, none
  # with FAKE_NO_ENDBR=1.
  stub objdump - <<'STUB'
[[ -n ${FAKE_NO_ENDBR:-} ]] || printf '   0:\tf3 0f 1e fa          \tendbr64\n'
printf '   4:\t55                   \tpush   %%rbp\n'
STUB
  stub modinfo - <<'STUB'
field="" file=""
while [[ $# -gt 0 ]]; do case $1 in -F) field=$2; shift ;; *) file=$1 ;; esac; shift; done
[[ -f ${file} ]] || exit 1
sed -n "s/^${field}=//p" "${file}"
STUB
  stub depmod - <<'STUB'
[[ -n ${FAKE_DEPMOD_FAIL:-} ]] && exit 1
# FAKE_DEPMOD_INDEX=1: write index files as depmod does (from the modules there).
if [[ -n ${FAKE_DEPMOD_INDEX:-} ]]; then
  b="" k=""
  while [[ $# -gt 0 ]]; do case $1 in -b) b=$2; shift ;; -C) shift ;; -*) ;; *) k=$1 ;; esac; shift; done
  d="${b}/lib/modules/${k}"
  (cd "${d}" && find . -name '*.ko*' | LC_ALL=C sort) >"${d}/modules.dep"
  : >"${d}/modules.alias.bin"
fi
exit 0
STUB
  stub update-initramfs - <<'STUB'
[[ -n ${FAKE_INITRAMFS_FAIL:-} ]] && exit 1
exit 0
STUB
  stub strip
  stub dpkg-query - <<<'exit 1'
  stub uname - <<'STUB'
case "$1" in -r) echo "${FIXTURE_KREL}" ;; *) echo Linux ;; esac
STUB
}

# hold_lock FILE SECONDS: another run holding the lock FILE for SECONDS (its
# pid in HOLDER); returns once the lock is held. release_lock ends it early.
hold_lock() {
  mkdir -p "$(dirname "$1")"
  rm -f "${BATS_TEST_TMPDIR}/locked"
  (
    exec 9>"$1"
    flock 9
    touch "${BATS_TEST_TMPDIR}/locked"
    sleep "$2"
  ) &
  HOLDER=$!
  while [[ ! -e ${BATS_TEST_TMPDIR}/locked ]]; do sleep 0.1; done
}

release_lock() {
  kill "${HOLDER}" 2>/dev/null || true
  wait "${HOLDER}" 2>/dev/null || true
}

# stub_dkms: the dkms stand-in (test/fixtures/dkms) first on PATH; it logs
# its arguments to $STUB_LOG itself.
stub_dkms() {
  printf '#!/usr/bin/env bash\nexec %q "$@"\n' "${REPO_ROOT}/test/fixtures/dkms" >"${STUBS}/dkms"
  chmod +x "${STUBS}/dkms"
}

# kernel_sign_file ROOT KREL: the sign-file stand-in (byte-identical output to
# the kernel's, see sign.bats) as KREL's headers' scripts/sign-file.
kernel_sign_file() {
  install -D -m 0755 "${REPO_ROOT}/test/fixtures/sign-file" "$1/usr/src/linux-headers-$2/scripts/sign-file"
}

# make_key_pair DIR NAME [DAYS]: NAME.key (PEM) and NAME.der (certificate) in DIR.
make_key_pair() {
  local dir=$1 name=$2 days=${3:-30}
  mkdir -p "${dir}"
  openssl req -new -x509 -nodes -days "${days}" -newkey rsa:2048 -subj "/CN=${name}/" \
    -keyout "${dir}/${name}.key" -outform DER -out "${dir}/${name}.der" >/dev/null 2>&1
}

# make_expired_pair DIR NAME: NAME.key and NAME.pem, a certificate that
# expired on 2020-01-02 (openssl ca sets past dates; req cannot).
make_expired_pair() {
  local dir=$1 name=$2 ca
  ca="${dir}/ca-${name}"
  mkdir -p "${ca}"
  : >"${ca}/index.txt"
  echo 01 >"${ca}/serial"
  printf '[ca]\ndefault_ca = d\n[d]\ndatabase = %s/index.txt\nnew_certs_dir = %s\nserial = %s/serial\ndefault_md = sha256\npolicy = p\n[p]\ncommonName = supplied\n' \
    "${ca}" "${ca}" "${ca}" >"${ca}/ca.cnf"
  openssl req -new -nodes -newkey rsa:2048 -subj "/CN=${name}/" -keyout "${dir}/${name}.key" -out "${ca}/req.csr" >/dev/null 2>&1
  openssl ca -batch -config "${ca}/ca.cnf" -selfsign -keyfile "${dir}/${name}.key" -in "${ca}/req.csr" \
    -startdate 20200101000000Z -enddate 20200102000000Z -out "${dir}/${name}.pem" >/dev/null 2>&1
}

# minutes_left: whole minutes before NVP2P_TEST_DEADLINE (epoch; .ci/run
# sets it), nothing when unset. The real tier's tests size their work by it.
minutes_left() {
  [[ -z ${NVP2P_TEST_DEADLINE:-} ]] || printf '%s\n' "$(((NVP2P_TEST_DEADLINE - $(date +%s)) / 60))"
}

# warm_need WARM COLD PATH...: the minutes a heavy test asks for: WARM when
# every PATH exists (a mark it wrote after a run there, what it keeps in the
# cache: its ccache and its inputs are warm), else COLD. An empty PATH (a
# search that found nothing) counts as missing.
warm_need() {
  local warm=$1 cold=$2 p
  shift 2
  for p in "$@"; do
    [[ -n ${p} && -e ${p} ]] || { printf '%s\n' "${cold}" && return 0; }
  done
  printf '%s\n' "${warm}"
}
