# shellcheck shell=bash
# lib/50-build.sh: the build stage. kbuild of the patched tree for one kernel,
# then checks of the five modules (present, version = tag, vermagic = kernel).

readonly BUILD_STAMP=".nvidia-p2p-build"
# The kernel-independent objects upstream's make leaves in a tree (relative
# paths): the same for every kernel, linked into nvidia.ko / nvidia-modeset.ko.
readonly P2P_KERNEL_OBJECTS="src/nvidia/_out/Linux_x86_64/nv-kernel.o src/nvidia-modeset/_out/Linux_x86_64/nv-modeset-kernel.o"
# Part of every build stamp: changes when the way build.sh runs upstream's
# make changes what it compiles, so that build trees and kernel-independent
# objects of the old way are not reused (2: CC as one word, see make_cc).
readonly BUILD_RECIPE=2
# Measured on 2 cores (docs/install.md, "Build times"): shown while building.
readonly P2P_BUILD_ESTIMATE="measured on 2 idle cores: 6-10 minutes with an empty ccache, 3 with a warm one; longer when other jobs share the cores"

# Seconds between the build's progress lines (NVP2P_PROGRESS_SECONDS lets
# tests make it short; users have no reason to set it).
P2P_PROGRESS_SECONDS=${NVP2P_PROGRESS_SECONDS:-30}
[[ ${P2P_PROGRESS_SECONDS} =~ ^[1-9][0-9]{0,4}$ ]] || P2P_PROGRESS_SECONDS=30
# The progress watcher of the command running now (progress_start), and
# whether its exit hook is registered.
P2P_PROGRESS_PID=""
P2P_PROGRESS_HOOKED=0

help_build() {
  usage_synopsis build
  cat <<'EOF'

Build the patched modules of <tag> for one kernel (default: the running one),
patching first if needed. Uses ccache when installed, and -j<number of CPUs>,
and the compiler the kernel was built with (CONFIG_CC_VERSION_TEXT) when it
is installed.

  --kernel KVER      build for installed kernel headers /lib/modules/KVER/build
                     (Debian: package linux-headers-KVER)
  --kernel-src DIR   build against a kernel build directory, e.g. headers
                     extracted from packages: the -amd64 directory of Debian's
                     split headers (its -common sibling is found from its Makefile,
                     also when extracted somewhere other than /usr/src), or a
                     full kernel tree
  --source PATH      where the upstream source comes from when the cache has
                     no patched tree of <tag> yet (as for fetch)
  --no-ccache        do not use ccache
  --units-only       a quick check instead of a build: compile only the
                     translation units the series changes, with upstream's own
                     build rules and flags (the RM objects in seconds; a
                     kernel-open object also runs the kernel's conftests, about
                     a minute, unless the cache holds results of the same
                     conftest inputs); no modules are made

The five modules (nvidia, nvidia-uvm, nvidia-modeset, nvidia-drm,
nvidia-peermem) are checked: modinfo version must equal <tag> and vermagic
the kernel's release. Prints the directory holding them on stdout. Also
assembles the DKMS source that `install` registers: kernel-open of the
patched tree, the two kernel-independent objects of this build
(nv-kernel.o_binary, nv-modeset-kernel.o_binary) and a dkms.conf, in
<work-dir>/<tag>/dkms-src. Refused (exit 17) when the disk of the work
directory has less than about 800 MiB free for a new build tree (a tag takes
about 1 GiB built), or fills up while building.
EOF
}

cmd_build() {
  local tag=""
  parse_stage_args build tag "$@"
  require_tag "${tag}"
  [[ ${P2P_UNITS_ONLY} -eq 1 ]] || resolve_kernel
  cache_lock
  fetch_source "${tag}"
  patch_tree "${tag}" "$(default_patched_dir "${tag}")"
  if [[ ${P2P_UNITS_ONLY} -eq 1 ]]; then
    compile_units "${tag}"
    say_next "$(next_cmd build "${tag}") (the whole build: the five modules)"
    return 0
  fi
  build_modules "${tag}"
  printf '%s\n' "${P2P_MODULES_DIR}"
  if [[ -n ${P2P_KERNEL} || -n ${P2P_KERNEL_SRC} ]]; then
    # shellcheck disable=SC2153 # P2P_KREL: resolve_kernel (lib/07-kernel.sh) set it
    say_next "$(next_cmd --sudo install "${tag}" --kernel "${P2P_KREL}")"
  else
    say_next "$(next_cmd --sudo install "${tag}")"
  fi
}

# kernel_cc SYSOUT: the C compiler to build with: the one the kernel was built
# with (the first word of CONFIG_CC_VERSION_TEXT, e.g. gcc-14) when it is
# installed, else ${CC:-gcc}, with a warning when the kernel names another;
# for a kernel built with clang, its clang (kernel_clang).
kernel_cc() {
  local text="" cc
  if [[ -r $1/.config ]]; then
    if grep -q '^CONFIG_CC_IS_CLANG=y' "$1/.config"; then
      kernel_clang "$1"
      return 0
    fi
    text=$(sed -n -E 's/^CONFIG_CC_VERSION_TEXT="([^" ]+).*/\1/p' "$1/.config" | head -n 1)
  fi
  if [[ -n ${text} && -n ${CC:-} && ${CC} != "${text}" ]]; then
    warn "CC=${CC}, but kernel ${P2P_KREL} was built with ${text}"
  elif [[ -n ${text} ]] && command -v "${text}" >/dev/null 2>&1; then
    printf '%s\n' "${text}"
    return 0
  elif [[ -n ${text} ]]; then
    warn "kernel ${P2P_KREL} was built with ${text}, which is not installed; using ${CC:-gcc} (modules built with another compiler may not load or may misbehave)"
  fi
  printf '%s\n' "${CC:-gcc}"
}

# kernel_clang SYSOUT: a kernel built with clang (CachyOS's, for one) takes
# modules built with clang and LLVM=1 only (gcc's flags differ, and its
# modules do not load there): the clang of the kernel's major version
# (CONFIG_CLANG_VERSION, e.g. 190107: 19), clang-<major> or a clang that is
# that version; EX_KERNEL when there is none, or when the kernel was linked
# with lld (CONFIG_LD_IS_LLD) and that version's ld.lld is missing.
kernel_clang() {
  local config=$1/.config text major cc v
  text=$(sed -n -E 's/^CONFIG_CC_VERSION_TEXT="(.*)"$/\1/p' "${config}" | head -n 1)
  major=$(sed -n -E 's/^CONFIG_CLANG_VERSION=([0-9]+)$/\1/p' "${config}" | head -n 1)
  [[ -n ${major} ]] && major=$((major / 10000))
  [[ -n ${major} ]] || major=$(sed -n -E 's/.*clang version ([0-9]+)\..*/\1/p' <<<"${text}")
  [[ -n ${major} ]] || die "${EX_KERNEL}" "kernel ${P2P_KREL} was built with clang (${text}), but its .config names no clang version (CONFIG_CLANG_VERSION); nothing was built"
  for cc in "clang-${major}" clang; do
    command -v "${cc}" >/dev/null 2>&1 || continue
    v=$("${cc}" --version 2>/dev/null | sed -n -E '1s/.*clang version ([0-9]+)\..*/\1/p')
    [[ ${v} == "${major}" ]] || continue
    if grep -q '^CONFIG_LD_IS_LLD=y' "${config}" && ! command -v "$(llvm_tool "${cc}" ld.lld)" >/dev/null 2>&1; then
      die "${EX_KERNEL}" "kernel ${P2P_KREL} was linked with lld (CONFIG_LD_IS_LLD), and $(llvm_tool "${cc}" ld.lld) is not installed (Debian: lld-${major}; Arch, CachyOS: lld); nothing was built"
    fi
    printf '%s\n' "${cc}"
    return 0
  done
  die "${EX_KERNEL}" "kernel ${P2P_KREL} was built with clang ${major} (${text}): its modules must be built with clang ${major} and LLVM=1 (modules built with gcc or another clang do not load into it), and neither clang-${major} nor a clang ${major} is installed (Debian: clang-${major} lld-${major} llvm-${major}; Arch, CachyOS: clang lld llvm); nothing was built"
}

# llvm_tool CC TOOL: TOOL of the same LLVM as CC (clang-19: ld.lld-19).
llvm_tool() {
  local cc=${1##*/}
  if [[ ${cc} == clang-* ]]; then
    printf '%s-%s\n' "$2" "${cc#clang-}"
  else
    printf '%s\n' "$2"
  fi
}

# llvm_make_args SYSOUT CC: the make variables a clang-built kernel needs
# besides CC, one per line (nothing for gcc): LLVM=1 (LLVM=-19 for
# clang-19: kbuild's suffix form), and LD, which kernel-open/Makefile passes
# to kbuild itself (default ld): ld.lld where the kernel was linked with it
# (with LTO, as CachyOS's kernels, GNU ld cannot link clang's objects);
# IGNORE_CC_MISMATCH=1: kernel-open's conftest (cc_version_check) compares
# the kernel's compiler version with __GNUC__, which clang defines as 4, so it
# fails for every clang-built kernel; kernel_clang checked the version instead.
llvm_make_args() {
  local config=$1/.config cc=$2
  grep -q '^CONFIG_CC_IS_CLANG=y' "${config}" 2>/dev/null || return 0
  if [[ ${cc##*/} == clang-* ]]; then
    cc=${cc##*/}
    printf 'LLVM=-%s\n' "${cc#clang-}"
  else
    printf 'LLVM=1\n'
  fi
  if grep -q '^CONFIG_LD_IS_LLD=y' "${config}"; then
    printf 'LD=%s\n' "$(llvm_tool "${cc}" ld.lld)"
  fi
  printf 'IGNORE_CC_MISMATCH=1\n'
}

# build_fingerprint CC: what a build of the patched tree with CC depends on
# besides the kernel (the patched tree's stamp, the compilers, BUILD_RECIPE).
build_fingerprint() {
  printf '%s %s %s' "$(cat "${P2P_PATCHED_DIR}/${PATCHED_STAMP}" 2>/dev/null || true)" \
    "$(compiler_id "$1")" "${BUILD_RECIPE}" | sha256sum | cut -d' ' -f1
}

# make_cc CC: P2P_MAKE_CC, what upstream's make gets as CC: CC itself, or,
# with ccache (installed, no --no-ccache; CCACHE_DIR defaults to the cache
# directory's), a wrapper script that runs "ccache CC", in the cache
# directory under a digest of its text. CC must stay one word: upstream's
# nv-compiler.sh runs "$(CC) -E" to tell gcc from clang and their versions,
# and from "ccache gcc-12" it learnt neither, so src/nvidia and
# src/nvidia-modeset were compiled without -fcf-protection=branch: an
# nv-kernel.o without ENDBR64, which a kernel with IBT stops at (check_endbr).
P2P_MAKE_CC=""
make_cc() {
  local cc=$1 ccache path body dir
  P2P_MAKE_CC=${cc}
  [[ ${P2P_NO_CCACHE} -eq 0 ]] && ccache=$(command -v ccache 2>/dev/null) || return 0
  export CCACHE_DIR="${CCACHE_DIR:-${P2P_CACHE_DIR}/ccache}"
  path=$(command -v -- "${cc}" 2>/dev/null) || path=${cc}
  body=$(printf '#!/usr/bin/env bash\n# build.sh: %q through ccache, as one word for upstream'"'"'s makefiles\nexec %q %q "$@"\n' \
    "${cc}" "${ccache}" "${path}")
  dir="${P2P_CACHE_DIR}/ccache-bin/$(printf '%s\n' "${body}" | sha256sum | cut -c1-16)"
  P2P_MAKE_CC="${dir}/${cc##*/}"
  [[ ${P2P_DRY_RUN} -eq 0 && ! -x ${P2P_MAKE_CC} ]] || return 0
  mkdir -p -- "${dir}"
  printf '%s\n' "${body}" >"${P2P_MAKE_CC}.tmp.$$"
  chmod 0755 "${P2P_MAKE_CC}.tmp.$$"
  mv -f -- "${P2P_MAKE_CC}.tmp.$$" "${P2P_MAKE_CC}"
}

# ccache_note: " through ccache" when make_cc chose the wrapper.
ccache_note() {
  [[ ${P2P_MAKE_CC} == */ccache-bin/* ]] && printf ' through ccache'
  return 0
}

# kernel_has_ibt SYSOUT: the kernel enforces Indirect Branch Tracking.
kernel_has_ibt() {
  grep -q -x 'CONFIG_X86_KERNEL_IBT=y' "$1/.config" 2>/dev/null
}

# check_endbr DIR WHY: the kernel-independent objects under DIR (nv-kernel.o,
# nv-modeset-kernel.o) have ENDBR64 landing pads, as upstream's makefiles
# give them with gcc >= 9.4 or clang >= 14 (-fcf-protection=branch). Without
# them a kernel with IBT stops at the first indirect call into them on a CPU
# with IBT (Intel since Tiger Lake): EX_BUILD rather than such modules.
check_endbr() {
  local dir=$1 why=$2 obj n
  need_cmd objdump binutils
  for obj in ${P2P_KERNEL_OBJECTS}; do
    n=$(objdump -d -- "${dir}/${obj}" 2>/dev/null | grep -c -w endbr64 || true)
    [[ ${n} -gt 0 ]] ||
      die "${EX_BUILD}" "${obj##*/} has no ENDBR64 instruction (it was compiled without -fcf-protection=branch), but ${why}: its modules would stop at the first indirect call on a CPU with IBT (${dir}/${obj})"
    verbose "${obj##*/}: ${n} ENDBR64 instructions"
  done
}

# compiler_id CC: what the build stamp records of the compilers: the C
# compiler's executable (compiler_path) and first version line, less the name
# it was called by (gcc prints that first), and the C++ compiler's
# (nvidia-modeset).
compiler_id() {
  local cc=$1 c cxx
  c=$("${cc}" --version 2>/dev/null | head -n 1) || c=""
  [[ ${c} == "${cc##*/} "* ]] && c=${c#"${cc##*/} "}
  cxx=$("${CXX:-g++}" --version 2>/dev/null | head -n 1) || cxx=""
  printf '%s|%s|%s' "$(compiler_path "${cc}")" "${c:-unknown}" "${cxx:-no C++ compiler}"
}

# compiler_path CC: the file CC runs, links resolved, so that two names of one
# compiler are one compiler (Debian's 6.12 kernels name x86_64-linux-gnu-gcc-12,
# its 6.1 kernels gcc-12, a link to it). A link to ccache keeps its own name,
# which is all that tells the compilers behind ccache apart; so does a CC that
# is not found.
compiler_path() {
  local path real
  path=$(command -v -- "$1" 2>/dev/null) || path=""
  [[ ${path} == /* ]] || { printf '%s' "$1" && return 0; }
  real=$(readlink -f -- "${path}") || real=${path}
  [[ ${real##*/} == ccache ]] && real=${path}
  printf '%s' "${real}"
}

# build_modules TAG: build in <work>/<tag>/build-<krel> (a copy of the patched
# tree, reused while it is current) and set P2P_MODULES_DIR to the checked modules.
P2P_MODULES_DIR=""
build_modules() {
  local tag=$1 bdir stamp jobs cc fingerprint rc=0
  local -a make_args
  need_cmd make make
  need_cmd modinfo kmod
  bdir="${P2P_WORK_DIR}/${tag}/build-${P2P_KREL}"
  P2P_MODULES_DIR="${P2P_WORK_DIR}/${tag}/modules-${P2P_KREL}"
  cc=$(kernel_cc "${P2P_SYSOUT}")
  # The patched tree and the compilers: objects of another kernel's build are
  # reused only when both are the same (never across compilers).
  fingerprint=$(build_fingerprint "${cc}")
  stamp="${fingerprint} ${P2P_KREL} ${P2P_SYSSRC} ${P2P_SYSOUT} $(kernel_digest "${P2P_SYSOUT}")"
  jobs=$(nproc_or_1)
  make_cc "${cc}"
  make_args=(-C "${bdir}" modules "-j${jobs}" "SYSSRC=${P2P_SYSSRC}" "SYSOUT=${P2P_SYSOUT}" "CC=${P2P_MAKE_CC}")
  mapfile -t -O "${#make_args[@]}" make_args < <(llvm_make_args "${P2P_SYSOUT}" "${cc}")
  [[ ${P2P_DRY_RUN} -eq 1 ]] || require_kernel_fits "${tag}"
  stage build "${tag} for ${P2P_KREL} with ${cc}$(ccache_note) (-j${jobs}; ${P2P_BUILD_ESTIMATE})"
  if [[ ${P2P_DRY_RUN} -eq 1 ]]; then
    printf 'would run: make %s\n' "$(quote_cmd "${make_args[@]}")"
    printf 'would check %s in %s and copy them to %s\n' "${P2P_MODULES}" "${bdir}/kernel-open" "${P2P_MODULES_DIR}"
    [[ -f ${bdir}/${BUILD_STAMP} ]] || space_check "$(dirname "${bdir}")" build "building ${tag} for ${P2P_KREL}"
    make_payload "${tag}" "${bdir}"
    return 0
  fi
  if [[ ! -f ${bdir}/${BUILD_STAMP} || "$(cat "${bdir}/${BUILD_STAMP}")" != "${stamp}" ]]; then
    rm -rf -- "${bdir}" "${P2P_MODULES_DIR}"
    space_check "$(dirname "${bdir}")" build "building ${tag} for ${P2P_KREL}"
    mkdir -p "$(dirname "${bdir}")"
    new_build_tree "${tag}" "${bdir}" "${fingerprint}" "${make_args[@]:3}"
    run_captured write_lines "${bdir}/${BUILD_STAMP}" "${stamp}" ||
      write_failed "${bdir}" "starting the build tree" "${EX_BUILD}" "cannot write ${bdir}/${BUILD_STAMP}" "${bdir}"
  fi
  run_logged_progress "${bdir}" make "${make_args[@]}" || rc=$?
  if [[ ${rc} -ne 0 ]]; then
    # a disk that filled up: the build tree goes (no half-built tree is
    # resumed), and one line says why
    P2P_CAPTURED=$(cat -- "${P2P_LOG_FILE:-/dev/null}" 2>/dev/null || true)
    if says_disk_full "${P2P_CAPTURED}" || [[ "$(disk_free_mib "${bdir}" || echo 1)" -lt 1 ]]; then
      write_failed "${bdir}" "building ${tag} for ${P2P_KREL}" "${EX_BUILD}" "build of ${tag} failed" "${bdir}"
    fi
    show_build_errors
    die "${EX_BUILD}" "build of ${tag} for ${P2P_KREL} failed (make exit ${rc}); full log: ${P2P_LOG_FILE:-none}; nothing was installed"
  fi
  stage check "modules of ${tag} for ${P2P_KREL}"
  check_modules "${bdir}/kernel-open" "${tag}" "${P2P_KREL}"
  ! kernel_has_ibt "${P2P_SYSOUT}" || check_endbr "${bdir}" "kernel ${P2P_KREL} has CONFIG_X86_KERNEL_IBT"
  rm -rf -- "${P2P_MODULES_DIR}"
  mkdir -p "${P2P_MODULES_DIR}"
  local m
  # what out-of-tree modules (and build.sh container --precompiled) link against: Module.symvers
  for m in ${P2P_MODULES// /.ko }.ko Module.symvers; do
    run_captured cp -- "${bdir}/kernel-open/${m}" "${P2P_MODULES_DIR}/" ||
      write_failed "${P2P_MODULES_DIR}" "copying the modules" "${EX_BUILD}" "cannot copy ${bdir}/kernel-open/${m}" "${P2P_MODULES_DIR}"
  done
  run_captured write_lines "${P2P_MODULES_DIR}/BUILD-INFO" "tag=${tag} kernel=${P2P_KREL}" ||
    write_failed "${P2P_MODULES_DIR}" "copying the modules" "${EX_BUILD}" "cannot write ${P2P_MODULES_DIR}/BUILD-INFO" "${P2P_MODULES_DIR}"
  make_payload "${tag}" "${bdir}"
}

# run_logged_progress DIR CMD...: run_logged (the output into the log only),
# and while CMD runs, progress lines on stderr read from the log: one when the
# build gets to a part it had not been in (nv-kernel.o, nv-modeset-kernel.o,
# a module of kernel-open), and every P2P_PROGRESS_SECONDS seconds the time it
# has taken with the last object compiled (paths relative to DIR). With
# --verbose (the output is on stderr already) or no log: run_logged alone.
run_logged_progress() {
  local dir=$1 rc=0
  shift
  if [[ ${P2P_DRY_RUN} -eq 1 || ${P2P_VERBOSE} -eq 1 || -z ${P2P_LOG_FILE} ]]; then
    run_logged "$@"
    return
  fi
  progress_start "${dir}"
  run_logged "$@" || rc=$?
  progress_stop
  return "${rc}"
}

# progress_start DIR: the watcher (progress_watch) in the background, from
# the log's present end; stopped by progress_stop, or at exit (Ctrl-C too).
progress_start() {
  local offset
  offset=$(stat -c %s -- "${P2P_LOG_FILE}" 2>/dev/null) || offset=0
  if [[ ${P2P_PROGRESS_HOOKED} -eq 0 ]]; then
    on_exit progress_stop
    P2P_PROGRESS_HOOKED=1
  fi
  progress_watch "$1" "$$" "${offset}" &
  P2P_PROGRESS_PID=$!
}

# progress_stop: end the watcher, if one runs.
progress_stop() {
  [[ -n ${P2P_PROGRESS_PID} ]] || return 0
  kill "${P2P_PROGRESS_PID}" 2>/dev/null || true
  wait "${P2P_PROGRESS_PID}" 2>/dev/null || true
  P2P_PROGRESS_PID=""
}

# progress_watch DIR PARENT OFFSET: once a second, the log's new output
# (after OFFSET; its last 64 KiB) while PARENT runs: progress_part's part,
# when it is a new one; and every P2P_PROGRESS_SECONDS seconds the elapsed
# time and the last object.
progress_watch() {
  local dir=$1 parent=$2 offset=$3 start=${SECONDS} next size from text part last took fd nap=""
  local -A seen=()
  # The run's locks are the run's: this watcher (and its sleep) must not keep
  # one held a moment after the run ended.
  for fd in "${P2P_LOCKS[@]}"; do
    [[ -z ${fd} ]] || exec {fd}>&-
  done
  # the sleep of the moment goes too, when progress_stop ends this
  trap 'kill ${nap:-} 2>/dev/null; exit 0' TERM
  next=$((start + P2P_PROGRESS_SECONDS))
  while kill -0 "${parent}" 2>/dev/null; do
    sleep 1 >/dev/null 2>&1 &
    nap=$!
    wait "${nap}" || true
    nap=""
    size=$(stat -c %s -- "${P2P_LOG_FILE}" 2>/dev/null) || continue
    from=$((size - 65536 > offset ? size - 65536 : offset))
    text=$(tail -c "+$((from + 1))" -- "${P2P_LOG_FILE}" 2>/dev/null) || text=""
    last=$(progress_last_object "${text}" "${dir}")
    part=$(progress_part "${text}" "${last}")
    if [[ -n ${part} && -z ${seen[${part}]+x} ]]; then
      seen[${part}]=1
      stage_print build "now: ${part}"
    fi
    if [[ ${SECONDS} -ge ${next} ]]; then
      took=$((SECONDS - start))
      stage_print build "still building: $((took / 60)) min $((took % 60)) s so far${part:+, in ${part}}; last: ${last:-nothing compiled yet}"
      next=$((SECONDS + P2P_PROGRESS_SECONDS))
    fi
  done
}

# progress_last_object TEXT DIR: the last line of make's output in TEXT that
# compiles or links (kbuild's "CC [M]  .../x.o", upstream's "CC  src/x.c",
# CONFTEST: ...), spaces squeezed, DIR/ left out of its paths.
progress_last_object() {
  local line
  line=$(grep -E '^[[:space:]]*(CC|CXX|LD|AR|OBJCOPY|HOSTCC|MODPOST|CONFTEST)([[:space:]]|:|\[)' <<<"$1" | tail -n 1) || true
  line=$(tr -s '[:space:]' ' ' <<<"${line}")
  line=${line# }
  line=${line% }
  printf '%s' "${line//"$2/"/}"
}

# progress_part TEXT LAST: which part of the build LAST (progress_last_object)
# belongs to: a module of kernel-open ("kernel-open, nvidia-uvm"), else from
# make's last "Entering directory" in TEXT: nv-kernel.o (src/nvidia),
# nv-modeset-kernel.o (src/nvidia-modeset), kernel-open (kbuild, in the
# kernel's directory); nothing when TEXT tells neither.
progress_part() {
  local text=$1 last=$2 dir obj
  if [[ ${last} =~ kernel-open/(nvidia[a-z-]*)/ ]]; then
    printf 'kernel-open, %s' "${BASH_REMATCH[1]}"
    return 0
  fi
  dir=$(sed -n -E "s/.*Entering directory ['\`]([^']*)'.*/\1/p" <<<"${text}" | tail -n 1)
  case ${dir} in
  "") ;;
  */src/nvidia) printf 'nv-kernel.o (src/nvidia)' ;;
  */src/nvidia-modeset) printf 'nv-modeset-kernel.o (src/nvidia-modeset)' ;;
  *)
    # kbuild of 6.13 and later names objects relative to M: nvidia-uvm/x.o
    obj=${last##* }
    if [[ ${obj} =~ ^(nvidia[a-z-]*)/ ]]; then
      printf 'kernel-open, %s' "${BASH_REMATCH[1]}"
    else
      printf 'kernel-open'
    fi
    ;;
  esac
}

# kernel_digest SYSOUT: what of a kernel build directory the conftests'
# results depend on besides its path: its .config and Module.symvers (the
# export checks read it). A tree changed in place (a kernel rebuilt with
# another configuration, a Module.symvers added) then gets a fresh build
# tree, not conftest results of the old one.
kernel_digest() {
  { cat -- "$1/.config" "$1/Module.symvers" 2>/dev/null || true; } | sha256sum | cut -c1-16
}

# new_build_tree TAG BDIR FINGERPRINT MAKEVARS...: the OS-agnostic objects
# (nv-kernel.o, nv-modeset-kernel.o) do not depend on the kernel, so a build of
# the same patched tree for another kernel is cloned and only kernel-open is
# cleaned and rebuilt; otherwise BDIR starts as a copy of the patched tree.
new_build_tree() {
  local tag=$1 bdir=$2 fingerprint=$3 other
  shift 3
  for other in "${P2P_WORK_DIR}/${tag}"/build-*; do
    [[ -f ${other}/${BUILD_STAMP} && ${other} != "${bdir}" ]] || continue
    [[ "$(cut -d' ' -f1 "${other}/${BUILD_STAMP}")" == "${fingerprint}" ]] || continue
    [[ -n $(find "${other}/src/nvidia" -name nv-kernel.o -print -quit 2>/dev/null) ]] || continue
    verbose "reusing the kernel-independent objects of ${other}"
    run_captured cp -a -- "${other}" "${bdir}" ||
      write_failed "${bdir}" "copying ${other}" "${EX_BUILD}" "cannot copy ${other}" "${bdir}"
    if run_logged make -C "${bdir}/kernel-open" clean "$@"; then
      return 0
    fi
    rm -rf -- "${bdir}"
  done
  run_captured cp -a -- "${P2P_PATCHED_DIR}" "${bdir}" ||
    write_failed "${bdir}" "copying the patched tree" "${EX_BUILD}" "cannot copy ${P2P_PATCHED_DIR}" "${bdir}"
}

show_build_errors() {
  [[ -n ${P2P_LOG_FILE} && -r ${P2P_LOG_FILE} ]] || return 0
  printf '%s: build errors (from %s):\n' "${P2P_PROG}" "${P2P_LOG_FILE}" >&2
  grep -E 'error:|Error [0-9]+|\*\*\*|#error|==> ERROR:|^nvidia-p2p: ' "${P2P_LOG_FILE}" | head -n 30 | sed 's/^/  /' >&2 || true
}

# check_modules DIR TAG KREL: all five modules present, version = TAG,
# vermagic's release = KREL.
check_modules() {
  local dir=$1 tag=$2 krel=$3 m version vermagic
  for m in ${P2P_MODULES}; do
    [[ -f ${dir}/${m}.ko ]] || die "${EX_BUILD}" "${m}.ko was not built (${dir})"
    version=$(modinfo -F version "${dir}/${m}.ko") || die "${EX_BUILD}" "modinfo cannot read ${dir}/${m}.ko"
    vermagic=$(modinfo -F vermagic "${dir}/${m}.ko")
    [[ ${version} == "${tag}" ]] || die "${EX_BUILD}" "${m}.ko has version '${version}', expected ${tag}"
    [[ ${vermagic%% *} == "${krel}" ]] || die "${EX_BUILD}" "${m}.ko has vermagic '${vermagic}', expected kernel ${krel}"
    verbose "${m}.ko: version ${version}, vermagic ${vermagic}"
  done
}

# kernel_rules_unmet TREE KREL: the reasons (one per line) why TREE cannot
# be built for kernel KREL, from kernels.conf; nothing when none applies.
kernel_rules_unmet() {
  local tree=$1 krel=$2 conf kver min file rule regex reason lineno=0
  conf="${P2P_DATA_DIR}/kernels.conf"
  [[ -r ${conf} ]] || return 0
  kver=$(kernel_series "${krel}")
  while read -r min file rule regex reason || [[ -n ${min} ]]; do
    lineno=$((lineno + 1))
    [[ -z ${min} || ${min} == \#* ]] && continue
    [[ ${min} =~ ^[0-9]+\.[0-9]+$ && ${file} =~ ^[A-Za-z0-9._/-]+$ && ${rule} =~ ^(needs|forbids)$ &&
      -n ${regex} && -n ${reason} ]] || die "${EX_DATA}" "${conf}:${lineno}: expected: kernel file needs|forbids regex reason"
    [[ ${kver} =~ ^[0-9]+\.[0-9]+$ ]] || continue
    version_le "${min}" "${kver}" || continue
    [[ -e ${tree}/${file} ]] || continue
    if grep -q -E -- "${regex}" "${tree}/${file}" 2>/dev/null; then
      [[ ${rule} == forbids ]] && printf 'Linux %s+: %s\n' "${min}" "${reason}"
    else
      [[ ${rule} == needs ]] && printf 'Linux %s+: %s\n' "${min}" "${reason}"
    fi
  done <"${conf}"
  return 0
}

# require_kernel_fits TAG: EX_KERNEL when kernels.conf knows why the patched
# tree cannot build for the resolved kernel.
require_kernel_fits() {
  local unmet
  unmet=$(kernel_rules_unmet "${P2P_PATCHED_DIR}" "${P2P_KREL}") || exit "$?"
  [[ -z ${unmet} ]] ||
    die "${EX_KERNEL}" "${1} cannot be built for kernel ${P2P_KREL}: ${unmet//$'\n'/; }"
}

# changed_units TAG [TREE]: the translation units (.c files) the tag's series
# changes, one path per line, relative to the source tree. With TREE (the
# patched tree), a kernel-open header the series changes adds the units that
# include it (header_includers): a header is compiled only inside a unit.
changed_units() {
  local tag=$1 tree=${2:-} dir names name files
  local -a headers=()
  dir=$(family_dir "${tag}")
  names=$(tag_series "${tag}") || exit "$?"
  files=$(while IFS= read -r name; do
    [[ -n ${name} ]] && sed -n -E 's|^\+\+\+ b/(.*)$|\1|p' "${dir}/${name}"
  done <<<"${names}")
  mapfile -t headers < <(grep -E '^kernel-open/.+\.h$' <<<"${files}" | sort -u)
  {
    grep -E '\.c$' <<<"${files}" || true
    [[ -z ${tree} || ${#headers[@]} -eq 0 ]] || header_includers "${tree}" "${headers[@]}"
  } | sort -u
}

# header_includers TREE HEADER...: for each kernel-open HEADER, the first .c
# file (by path) of each kernel-open module that includes it by name and that
# the module's Kbuild sources list. One unit per module keeps gate (a) cheap
# (Linux 595's nv-linux.h is included by 37 units); a header's declarations,
# types and inline functions are compiled in each of them, but a macro only
# where a unit expands it.
header_includers() {
  local tree=$1 h base unit mod
  shift
  for h in "$@"; do
    base=${h##*/}
    while IFS= read -r unit; do
      mod=${unit#kernel-open/}
      mod=${mod%%/*}
      if grep -q -r -F --include='*.Kbuild' --include='*.mk' -e "${unit#kernel-open/}" \
        "${tree}/kernel-open/${mod}" 2>/dev/null; then
        printf '%s\t%s\n' "${mod}" "${unit}"
      fi
    done < <(cd "${tree}" 2>/dev/null &&
      grep -r -l -E --include='*.c' "^[[:space:]]*#[[:space:]]*include[[:space:]]*[\"<]${base//./\\.}[\">]" kernel-open |
      sort) | awk -F'\t' '!seen[$1]++ { print $2 }'
  done
}

# compile_units TAG: gate (a). In a copy of the patched tree, compile each
# changed unit with upstream's own rules: src/<component>/**/x.c through its
# Makefile's object target _out/Linux_x86_64/x.o; kernel-open/<mod>/x.c
# through kbuild's single-object target (after the tag's conftests) for the
# resolved kernel. EX_BUILD when one fails. Prints one line per unit.
compile_units() {
  local tag=$1 tree units unit comp cc rc=0
  local -a kobjs=()
  need_cmd make make
  units=$(changed_units "${tag}" "${P2P_PATCHED_DIR}") || exit "$?"
  # A kernel is needed for kernel-open units only.
  if grep -q '^kernel-open/' <<<"${units}"; then
    resolve_kernel
    [[ ${P2P_DRY_RUN} -eq 1 ]] || require_kernel_fits "${tag}"
  fi
  cc=$(kernel_cc "${P2P_SYSOUT:-/nonexistent}")
  make_cc "${cc}"
  stage compile "${tag}: $(grep -c . <<<"${units}") changed translation units with ${cc}$(ccache_note)"
  if [[ ${P2P_DRY_RUN} -eq 1 ]]; then
    printf 'would compile in a copy of %s:\n' "${P2P_PATCHED_DIR}"
    printf '  %s\n' "${units//$'\n'/$'\n'  }"
    return 0
  fi
  tree="${P2P_WORK_DIR}/${tag}/units"
  rm -rf -- "${tree}"
  space_check "${P2P_WORK_DIR}" patch "compiling the changed units of ${tag}"
  run_captured cp -a -- "${P2P_PATCHED_DIR}" "${tree}" ||
    write_failed "${P2P_WORK_DIR}" "copying the patched tree" "${EX_BUILD}" "cannot copy ${P2P_PATCHED_DIR}" "${tree}"
  while IFS= read -r unit; do
    [[ -n ${unit} ]] || continue
    case ${unit} in
    src/*)
      comp=${unit#src/}
      comp=${comp%%/*}
      if run_logged make -C "${tree}/src/${comp}" "CC=${P2P_MAKE_CC}" "_out/Linux_x86_64/$(basename "${unit%.c}").o"; then
        printf 'ok    %s\n' "${unit}"
      else
        printf 'FAIL  %s\n' "${unit}"
        rc=1
      fi
      ;;
    kernel-open/*) kobjs+=("${unit#kernel-open/}") ;;
    esac
  done <<<"${units}"
  if [[ ${#kobjs[@]} -gt 0 ]]; then
    compile_kernel_open_units "${tree}" "${cc}" "${kobjs[@]}" || rc=1
  fi
  if [[ ${rc} -ne 0 ]]; then
    show_build_errors
    die "${EX_BUILD}" "a changed translation unit of ${tag} does not compile; full log: ${P2P_LOG_FILE:-none}"
  fi
  rm -rf -- "${tree}"
}

# compile_kernel_open_units TREE CC UNIT...: kbuild's single-object targets,
# with the variables kernel-open/Makefile passes to kbuild (CC: the compiler;
# make gets P2P_MAKE_CC). The conftests of the nvidia module always run too:
# the common headers every module includes (nv-linux.h, nv-time.h, nv-mm.h)
# test the macros of nvidia's conftest list, so a unit of nvidia-uvm alone
# would see them undefined (610.57.04, whose series changes only nvidia-uvm's
# kernel-open units).
compile_kernel_open_units() {
  local tree=$1 cc=$2 unit
  shift 2
  local -a objs=() mods=(nvidia) kb=(-C "${P2P_SYSSRC}" "M=${tree}/kernel-open" "ARCH=$(uname -m)"
    "NV_KERNEL_SOURCES=${P2P_SYSSRC}" "NV_KERNEL_OUTPUT=${P2P_SYSOUT}" "CC=${P2P_MAKE_CC}" "-j$(nproc_or_1)")
  mapfile -t -O "${#kb[@]}" kb < <(llvm_make_args "${P2P_SYSOUT}" "${cc}")
  [[ ${P2P_SYSOUT} != "${P2P_SYSSRC}" ]] && kb+=("KBUILD_OUTPUT=${P2P_SYSOUT}")
  for unit in "$@"; do
    objs+=("${unit%.c}.o")
    [[ " ${mods[*]-} " == *" ${unit%%/*} "* ]] || mods+=("${unit%%/*}")
  done
  local verdict=ok rc=0 key cached
  key=$(conftest_key "${tree}/kernel-open" "${cc}" "${mods[@]}")
  cached="${P2P_CACHE_DIR}/conftest/${key}"
  if [[ -d ${cached} ]]; then
    restore_conftest "${cached}" "${tree}/kernel-open/conftest"
    verbose "kernel-open units for ${P2P_KREL}: ${objs[*]} (conftest results of the same inputs reused: ${cached})"
  else
    verbose "kernel-open units for ${P2P_KREL}: ${objs[*]} (runs the conftests first)"
  fi
  run_logged make "${kb[@]}" "NV_KERNEL_MODULES=${mods[*]}" "${objs[@]}" || { verdict=FAIL && rc=1; }
  for unit in "$@"; do
    printf '%-5s kernel-open/%s (kernel %s)\n' "${verdict}" "${unit}" "${P2P_KREL}"
  done
  [[ ${rc} -ne 0 || -d ${cached} ]] || save_conftest "${tree}/kernel-open/conftest" "${cached}"
  return "${rc}"
}

# conftest_key KDIR CC MODULE...: a digest of everything the kernel-open
# conftests' results depend on: the compiler, the kernel (paths, .config,
# release, generated config, version in its Makefile), conftest.sh, the
# Kbuild files that choose the tests and their flags (Kbuild without its
# NV_VERSION_STRING line: that macro is used by no test). 129 tags share 63
# keys, so gate (a) runs half as many conftests. Missing files count as empty.
conftest_key() {
  local kdir=$1 cc=$2 f
  shift 2
  {
    printf 'conftest-key-1\n%s\n%s\n%s\n%s\n%s\n' "$(compiler_id "${cc}")" "$(uname -m)" \
      "${P2P_SYSSRC}" "${P2P_SYSOUT}" "$*"
    for f in "${P2P_SYSOUT}/.config" "${P2P_SYSOUT}/include/generated/utsrelease.h" \
      "${P2P_SYSOUT}/include/generated/autoconf.h" "${P2P_SYSSRC}/Makefile" \
      "${kdir}/conftest.sh" "${kdir}/header-presence-tests.mk"; do
      printf '== %s\n' "${f##*/}"
      cat -- "${f}" 2>/dev/null || true
    done
    printf '== Kbuild\n'
    grep -v 'NV_VERSION_STRING' "${kdir}/Kbuild" 2>/dev/null || true
    for f in "$@"; do
      printf '== %s.Kbuild\n' "${f}"
      cat -- "${kdir}/${f}/${f}.Kbuild" 2>/dev/null || true
    done
  } | sha256sum | cut -d' ' -f1
}

# restore_conftest CACHED DIR: the cached conftest results into DIR, all with
# one new mtime, so that make finds them newer than conftest.sh and runs no
# test (the uts_release check still runs, and rewrites nothing when equal).
restore_conftest() {
  local now
  rm -rf -- "$2"
  cp -R -- "$1" "$2"
  now=$(date +%s)
  find "$2" -exec touch -d "@${now}" {} +
}

# save_conftest DIR CACHED: keep the conftest results of a successful
# compile (written to a temporary name, then renamed).
save_conftest() {
  local tmp="$2.tmp.$$"
  [[ -f $1/headers.h ]] || return 0
  mkdir -p "$(dirname "$2")"
  rm -rf -- "${tmp}"
  if cp -R -- "$1" "${tmp}" && mv -T -- "${tmp}" "$2" 2>/dev/null; then
    return 0
  fi
  rm -rf -- "${tmp}"
}
