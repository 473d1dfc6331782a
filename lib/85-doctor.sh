# shellcheck shell=bash
# lib/85-doctor.sh: doctor, why P2P works or not on this machine, pair by pair.
# The collecting (running nvidia-smi, lspci, dmesg ... and reading sysfs and
# procfs) is here; the reading of what was collected is verify/p2p-doctor
# (plain C beside p2p-verify's own parsers, built with the host compiler, no
# CUDA), so a bundle from another machine, or outputs pasted from an issue
# thread, are diagnosed by the same code as this machine.

# Where procfs is (tests use fixture trees, like NVP2P_SYSFS).
P2P_PROCFS="${NVP2P_PROCFS:-/proc}"
# Seconds one collecting command may take (nvidia-smi can hang on a GPU that
# fell off the bus).
P2P_DOCTOR_TIMEOUT="${NVP2P_DOCTOR_TIMEOUT:-60}"

help_doctor() {
  usage_synopsis doctor
  cat <<'EOF'

Why P2P works or not on this machine: for every ordered GPU pair a verdict
(p2p-bar1, p2p-nvlink, p2p, host-staged, not-possible, unknown), each cause
as a finding with a stable id, the lines it was read from, and the fix;
machine-wide findings apart. It runs before anything is installed (no driver,
CUDA or NCCL needed) and changes nothing; it needs make and a C compiler
(cc) to build its reader, verify/p2p-doctor, in a temporary directory.

  (no option)     collect this machine's outputs into a temporary directory,
                  diagnose them, remove the directory
  --collect DIR   write the outputs doctor reads to DIR (new or empty), with
                  a MANIFEST.txt of what was and was not collected and why;
                  serial numbers and GPU UUIDs are removed. Nothing is
                  written anywhere else. Send DIR with a bug report.
  --from DIR      diagnose DIR offline: a bundle of --collect from any
                  machine, or a directory of outputs pasted from an issue
                  thread (any file names; each output is recognised by its
                  content; source.txt, diagnosis.txt, expected.txt skipped)
  --verify        also run verify/p2p-verify --json --quick and read its
                  result; where it is not built and nvcc is there, it is
                  built first into a temporary directory (build.sh verify
                  --build-only keeps one); without nvcc that is said; not
                  with --from (it runs on this machine)
  --json          the diagnosis as JSON (schema in docs/diagnosis.md, "JSON");
                  not with --collect

Run as root for everything: lspci shows ACS and Resizable BAR only to root,
and dmesg may be restricted.

Exit codes: 0 nothing found that stops P2P and every pair has a verdict
(pairs whose data no output checked are said: --verify checks every byte);
30 a finding stops or breaks P2P; 31 insufficient data: a pair's state, or
why P2P fails or is slow, cannot be told (the report lists what to collect);
32 fewer than two NVIDIA GPUs (one, or none where the sysfs read lists
the GPUs; none identified in outputs that do not list them is 31);
33 nothing readable (or DIR cannot be written); 2 usage; 10 no C compiler
to build the reader.
EOF
}

# parse_doctor_args ARGS...: doctor's options (its synopsis), and what
# excludes what.
parse_doctor_args() {
  local stray=""
  parse_stage_args doctor stray "$@"
  [[ -z ${stray} ]] || die "${EX_USAGE}" "unexpected argument '${stray}' for doctor (see: build.sh help doctor)"
  [[ -z ${P2P_DOCTOR_COLLECT} || -z ${P2P_DOCTOR_FROM} ]] || die "${EX_USAGE}" "--collect and --from exclude each other"
  [[ -z ${P2P_DOCTOR_COLLECT} || ${P2P_DOCTOR_JSON} -eq 0 ]] || die "${EX_USAGE}" "--json applies to a diagnosis, not to --collect"
  [[ -z ${P2P_DOCTOR_FROM} || ${P2P_DOCTOR_VERIFY} -eq 0 ]] || die "${EX_USAGE}" "--verify runs on this machine; it does not apply to --from"
}

cmd_doctor() {
  parse_doctor_args "$@"
  if [[ -n ${P2P_DOCTOR_COLLECT} ]]; then
    doctor_collect_into "${P2P_DOCTOR_COLLECT}"
    return 0
  fi
  local -a args=()
  [[ ${P2P_DOCTOR_JSON} -eq 1 ]] && args+=(--json)
  if [[ -n ${P2P_DOCTOR_FROM} ]]; then
    if [[ -f ${P2P_DOCTOR_FROM} ]]; then
      die "${EX_DOCTOR_UNREADABLE}" "--from ${P2P_DOCTOR_FROM} is a file; --from reads a directory: put the saved outputs (one command's output per file, any names) into a directory and give that, e.g. mkdir pastes && mv ${P2P_DOCTOR_FROM##*/} pastes/ && build.sh doctor --from pastes"
    fi
    [[ -d ${P2P_DOCTOR_FROM} ]] || die "${EX_DOCTOR_UNREADABLE}" "--from ${P2P_DOCTOR_FROM}: no such directory"
    doctor_run --from "${P2P_DOCTOR_FROM}" "${args[@]+"${args[@]}"}"
  else
    doctor_here "${args[@]+"${args[@]}"}"
  fi
}

# doctor_here ARGS...: collect this machine into a temporary directory and
# diagnose it with p2p-doctor ARGS.
doctor_here() {
  local bundle
  mk_temp_dir "${TMPDIR:-/tmp}"
  bundle="${P2P_TMP}/bundle"
  mkdir -p "${bundle}"
  doctor_collect "${bundle}"
  doctor_run --from "${bundle}" --label "this machine ($(uname -n), collected now)" "$@"
}

# doctor_run ARGS...: p2p-doctor ARGS, built first; its exit code is ours.
doctor_run() {
  local rc=0
  doctor_build_tool
  "${P2P_DOCTOR_BIN}" "$@" || rc=$?
  case ${rc} in
  0 | "${EX_DOCTOR_BLOCKED}" | "${EX_DOCTOR_INSUFFICIENT}" | "${EX_DOCTOR_NO_PAIR}" | "${EX_DOCTOR_UNREADABLE}") return "${rc}" ;;
  *) die "${EX_FAIL}" "p2p-doctor failed (exit ${rc})" ;;
  esac
}

# doctor_build_tool: build verify/p2p-doctor into a temporary directory
# (removed at exit) and set P2P_DOCTOR_BIN to it (not printed: a command
# substitution would lose the temp directory's registration). Nothing is
# written beside the sources.
P2P_DOCTOR_BIN=""
doctor_build_tool() {
  local dir
  [[ -n ${P2P_DOCTOR_BIN} && -x ${P2P_DOCTOR_BIN} ]] && return 0
  # a reader built beforehand (the tests build one per run)
  if [[ -n ${NVP2P_DOCTOR_BIN:-} && -x ${NVP2P_DOCTOR_BIN} ]]; then
    P2P_DOCTOR_BIN=${NVP2P_DOCTOR_BIN}
    return 0
  fi
  command -v make >/dev/null 2>&1 || die "${EX_PREFLIGHT}" "doctor needs 'make' to build its reader (Debian package: make)"
  command -v "${CC:-cc}" >/dev/null 2>&1 || die "${EX_PREFLIGHT}" "doctor needs a C compiler ('${CC:-cc}') to build its reader verify/p2p-doctor (Debian package: gcc); without one, 'build.sh doctor --collect DIR' still works and any machine can diagnose DIR"
  mk_temp_dir "${TMPDIR:-/tmp}"
  dir=${P2P_TMP}
  make -s -C "${P2P_DATA_DIR}/verify" doctor DOCTOR_BIN="${dir}/p2p-doctor" >&2 ||
    die "${EX_BUILD}" "could not build verify/p2p-doctor (see the compiler's messages above)"
  P2P_DOCTOR_BIN="${dir}/p2p-doctor"
}

# --- collecting -------------------------------------------------------------

# doctor_collect_into DIR: --collect; DIR must be new or empty.
doctor_collect_into() {
  local dir=$1 n_ok n_all
  if [[ -e ${dir} ]]; then
    [[ -d ${dir} ]] || die "${EX_USAGE}" "--collect ${dir}: exists and is not a directory"
    [[ -z $(find "${dir}" -mindepth 1 -maxdepth 1 -print -quit 2>/dev/null) ]] ||
      die "${EX_USAGE}" "--collect ${dir}: not empty; give a new or empty directory"
  fi
  (umask 077 && mkdir -p -- "${dir}") 2>/dev/null || die "${EX_DOCTOR_UNREADABLE}" "--collect ${dir}: cannot create it"
  [[ -w ${dir} ]] || die "${EX_DOCTOR_UNREADABLE}" "--collect ${dir}: not writable"
  doctor_collect "${dir}"
  n_all=$(grep -c -v '^#' "${dir}/MANIFEST.txt" || true)
  n_ok=$(grep -c '^ok' "${dir}/MANIFEST.txt" || true)
  printf 'bundle %s: %s of %s outputs collected; what was not, and why, is in MANIFEST.txt:\n' "${dir}" "${n_ok}" "${n_all}"
  grep -v -e '^#' -e '^ok' "${dir}/MANIFEST.txt" | sed 's/^/  /' || true
  printf 'diagnose it here or on any machine: build.sh doctor --from %s\n' "${dir}"
}

# doctor_collect DIR: every output doctor reads, into DIR (exists), and
# DIR/MANIFEST.txt: "ok|missing|failed <TAB> file <TAB> command or reason".
doctor_collect() {
  local dir=$1
  {
    printf '# p2p-doctor bundle, format 1\n'
    printf '# collected %s by build.sh %s doctor, kernel %s, as %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
      "${P2P_VERSION}" "$(uname -r)" "$(is_root && echo root || echo "a normal user (lspci capabilities and dmesg may be hidden)")"
  } >"${dir}/MANIFEST.txt"
  collect_cmd "${dir}" nvidia-smi.txt nvidia-smi -- nvidia-smi
  collect_cmd "${dir}" nvidia-smi-q.txt nvidia-smi -- nvidia-smi -q
  collect_cmd "${dir}" nvidia-smi-topo-m.txt nvidia-smi -- nvidia-smi topo -m
  collect_p2p_matrices "${dir}"
  collect_cmd "${dir}" nvidia-smi-nvlink.txt nvidia-smi -- nvidia-smi nvlink -s
  collect_cmd "${dir}" lspci.txt lspci -- lspci -vvv
  collect_dmesg "${dir}"
  collect_file "${dir}" cmdline.txt "${P2P_PROCFS}/cmdline"
  collect_file "${dir}" nvidia-version.txt "${P2P_PROCFS}/driver/nvidia/version"
  collect_file "${dir}" nvidia-params.txt "${P2P_PROCFS}/driver/nvidia/params"
  collect_cmd "${dir}" modinfo.txt modinfo -- modinfo nvidia
  collect_modprobe "${dir}"
  collect_secure_boot "${dir}"
  collect_sysfs "${dir}"
  collect_userspace "${dir}"
  collect_ours "${dir}"
  [[ ${P2P_DOCTOR_VERIFY} -eq 1 ]] && collect_verify "${dir}"
  return 0
}

# manifest DIR STATUS FILE TEXT
manifest() {
  printf '%s\t%s\t%s\n' "$2" "$3" "$4" >>"$1/MANIFEST.txt"
}

# redact: serial numbers and GPU UUIDs out of a command's output.
redact() {
  sed -E -e 's/(Serial Number[[:space:]]*:?[[:space:]]*).*/\1[removed]/' \
    -e 's/GPU-[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}/GPU-[removed]/g'
}

# collect_cmd DIR FILE PROGRAM -- CMD...: CMD's output (stdout and stderr,
# redacted) into DIR/FILE; recorded in the manifest either way.
collect_cmd() {
  local dir=$1 file=$2 prog=$3 rc=0
  shift 4
  if ! command -v "${prog}" >/dev/null 2>&1; then
    manifest "${dir}" missing "${file}" "${prog} is not installed$(program_origin "${prog}")"
    return 0
  fi
  timeout "${P2P_DOCTOR_TIMEOUT}" "$@" >"${dir}/.raw" 2>&1 || rc=$?
  redact <"${dir}/.raw" >"${dir}/${file}"
  rm -f -- "${dir}/.raw"
  if [[ ${rc} -eq 124 ]]; then
    manifest "${dir}" failed "${file}" "$* did not finish in ${P2P_DOCTOR_TIMEOUT} s (a hung GPU?)"
  elif [[ ${rc} -ne 0 ]]; then
    manifest "${dir}" failed "${file}" "$* exited ${rc}: $(head -c 160 "${dir}/${file}" | tr '\n' ' ')"
  else
    manifest "${dir}" ok "${file}" "$*"
  fi
}

# program_origin PROG: where PROG comes from, as " (...)" after "is not
# installed": the Debian/Ubuntu package (the same name on Fedora and Arch),
# or the NVIDIA driver.
program_origin() {
  case $1 in
  nvidia-smi) printf ' (no NVIDIA driver yet)' ;;
  lspci) printf ' (package pciutils)' ;;
  modinfo) printf ' (package kmod)' ;;
  mokutil) printf ' (package mokutil)' ;;
  esac
}

# collect_p2p_matrices DIR: topo -p2p r and w in one file, each under its
# command line.
collect_p2p_matrices() {
  local dir=$1 mode rc=0
  if ! command -v nvidia-smi >/dev/null 2>&1; then
    manifest "${dir}" missing nvidia-smi-topo-p2p.txt "nvidia-smi is not installed (no NVIDIA driver yet)"
    return 0
  fi
  for mode in r w; do
    printf 'nvidia-smi topo -p2p %s\n' "${mode}"
    timeout "${P2P_DOCTOR_TIMEOUT}" nvidia-smi topo -p2p "${mode}" 2>&1 || rc=$?
  done >"${dir}/nvidia-smi-topo-p2p.txt"
  if [[ ${rc} -ne 0 ]]; then
    manifest "${dir}" failed nvidia-smi-topo-p2p.txt "nvidia-smi topo -p2p exited ${rc}"
  else
    manifest "${dir}" ok nvidia-smi-topo-p2p.txt "nvidia-smi topo -p2p r; nvidia-smi topo -p2p w"
  fi
}

# collect_file DIR FILE PATH: a procfs/sysfs file, copied.
collect_file() {
  local dir=$1 file=$2 path=$3
  if [[ ! -r ${path} ]]; then
    manifest "${dir}" missing "${file}" "${path} does not exist$([[ ${path} == */nvidia/* ]] && printf ' (the nvidia module is not loaded)')"
    return 0
  fi
  redact <"${path}" >"${dir}/${file}" 2>/dev/null || { manifest "${dir}" failed "${file}" "${path} could not be read"; return 0; }
  manifest "${dir}" ok "${file}" "cat ${path}"
}

# The kernel log lines doctor reads (dmesg is large and personal).
DOCTOR_DMESG_RE='NVRM|nvidia|DMAR|AMD-Vi|IO_PAGE_FAULT|iommu|IOMMU|BAR [0-9]|Lockdown|module verification|[Ss]ecure ?[Bb]oot|Command line|Hypervisor|nouveau|vgaarb|fbcon|Key was rejected|Xid|smmu'

collect_dmesg() {
  local dir=$1 src=""
  if command -v dmesg >/dev/null 2>&1 && timeout "${P2P_DOCTOR_TIMEOUT}" dmesg >"${dir}/.dmesg" 2>/dev/null; then
    src="dmesg"
  elif command -v journalctl >/dev/null 2>&1 &&
    timeout "${P2P_DOCTOR_TIMEOUT}" journalctl -k -b --no-pager -q >"${dir}/.dmesg" 2>/dev/null; then
    src="journalctl -k -b"
  fi
  if [[ -z ${src} ]]; then
    rm -f -- "${dir}/.dmesg"
    manifest "${dir}" failed dmesg.txt "the kernel log could not be read (dmesg and journalctl -k refused: run as root)"
    return 0
  fi
  grep -E -- "${DOCTOR_DMESG_RE}" "${dir}/.dmesg" | redact >"${dir}/dmesg.txt" || true
  rm -f -- "${dir}/.dmesg"
  manifest "${dir}" ok dmesg.txt "${src} | grep -E '${DOCTOR_DMESG_RE}'"
}

# collect_modprobe DIR: the nvidia lines of every modprobe.d file kmod
# reads: those of /etc, /run, /usr/local/lib, /usr/lib and /lib, a file
# hiding those of its name in the directories after it (an admin's
# /etc/modprobe.d/nvidia-p2p.conf overrides the package's
# /usr/lib/modprobe.d/nvidia-p2p.conf as a whole); a hidden file is named
# on a "modprobe-hidden:" line, without its options; comments are left out.
collect_modprobe() {
  local dir=$1 d f b
  local -A seen=()
  : >"${dir}/modprobe.txt"
  for d in etc/modprobe.d run/modprobe.d usr/local/lib/modprobe.d usr/lib/modprobe.d lib/modprobe.d; do
    # /lib is /usr/lib on merged-/usr systems: the same files, read once
    [[ ${d} == lib/modprobe.d && -d ${P2P_ROOT}/${d} && ${P2P_ROOT}/${d} -ef ${P2P_ROOT}/usr/lib/modprobe.d ]] && continue
    for f in "${P2P_ROOT}/${d}"/*.conf; do
      [[ -r ${f} ]] || continue
      b=${f##*/}
      if [[ -n ${seen[${b}]:-} ]]; then
        grep -q -i -E 'nvidia|nouveau' "${f}" 2>/dev/null &&
          printf 'modprobe-hidden: /%s/%s (overridden by %s)\n' "${d}" "${b}" "${seen[${b}]}" >>"${dir}/modprobe.txt"
        continue
      fi
      seen[${b}]="/${d}/${b}"
      # not the comments: an options line commented out is not in effect
      grep -H -i -E 'nvidia|nouveau' "${f}" 2>/dev/null | grep -v -E '^[^:]*:[[:space:]]*#' |
        sed "s|^${P2P_ROOT}||" >>"${dir}/modprobe.txt" || true
    done
  done
  if ! grep -q -v '^modprobe-hidden:' "${dir}/modprobe.txt"; then
    printf 'modprobe-options: none (no nvidia or nouveau line in modprobe.d)\n' >>"${dir}/modprobe.txt"
  fi
  manifest "${dir}" ok modprobe.txt "grep -i nvidia /etc/modprobe.d/*.conf /run/modprobe.d/*.conf /usr/local/lib/modprobe.d/*.conf /usr/lib/modprobe.d/*.conf (a file hiding those of its name after it)"
}

collect_secure_boot() {
  local dir=$1
  if command -v mokutil >/dev/null 2>&1; then
    collect_cmd "${dir}" secure-boot.txt mokutil -- mokutil --sb-state
  elif secure_boot_enabled; then
    printf 'SecureBoot enabled (EFI variable)\n' >"${dir}/secure-boot.txt"
    manifest "${dir}" ok secure-boot.txt "the SecureBoot EFI variable"
  elif [[ -d ${P2P_SYSFS}/firmware/efi ]]; then
    printf 'SecureBoot disabled (EFI variable)\n' >"${dir}/secure-boot.txt"
    manifest "${dir}" ok secure-boot.txt "the SecureBoot EFI variable"
  else
    printf 'SecureBoot disabled (no EFI: legacy boot)\n' >"${dir}/secure-boot.txt"
    manifest "${dir}" ok secure-boot.txt "no ${P2P_SYSFS}/firmware/efi"
  fi
}

# collect_sysfs DIR: per NVIDIA GPU what sysfs says (BAR1, link, NUMA, the
# IOMMU group's type, the boot VGA flag); whether an IOMMU is active.
collect_sysfs() {
  local dir=$1 gpu dev n=0 f grp
  {
    if [[ -n $(find "${P2P_SYSFS}/class/iommu" -mindepth 1 -maxdepth 1 2>/dev/null) ]]; then
      printf 'iommu-present: 1\n'
    else
      printf 'iommu-present: 0\n'
    fi
    if [[ -d ${P2P_SYSFS}/module/nouveau ]]; then
      printf 'nouveau-loaded: 1\n'
    fi
    while IFS= read -r gpu; do
      n=$((n + 1))
      dev="${P2P_SYSFS}/bus/pci/devices/${gpu}"
      printf 'sysfs-gpu %s\n' "${gpu}"
      printf '  bar1_bytes %s\n' "$(gpu_bar1_bytes "${gpu}")"
      for f in boot_vga current_link_speed current_link_width max_link_speed max_link_width numa_node; do
        if [[ -r ${dev}/${f} ]]; then
          printf '  %s %s\n' "${f}" "$(head -n 1 "${dev}/${f}" 2>/dev/null)"
        fi
      done
      if [[ -L ${dev}/driver ]]; then
        printf '  driver %s\n' "$(basename "$(readlink "${dev}/driver")")"
      fi
      if [[ -L ${dev}/iommu_group ]]; then
        grp=$(readlink -f "${dev}/iommu_group")
        printf '  iommu_group %s\n' "${grp##*/}"
        if [[ -r ${grp}/type ]]; then
          printf '  iommu_group_type %s\n' "$(head -n 1 "${grp}/type")"
        fi
      fi
    done < <(nvidia_gpus)
    printf 'sysfs-gpus: %s\n' "${n}"
  } >"${dir}/sysfs.txt"
  manifest "${dir}" ok sysfs.txt "${P2P_SYSFS}/bus/pci/devices (${n} NVIDIA GPU$([[ ${n} -eq 1 ]] || printf s)), ${P2P_SYSFS}/class/iommu"
}

# gpu_bar1_bytes ADDR: the size of BAR1, the GPU's second memory BAR: the
# second non-empty line among the six BAR lines of sysfs' resource file (a
# 64-bit BAR0 leaves the next line empty, so BAR1 is not always on line 2);
# 0 when it is not assigned.
gpu_bar1_bytes() {
  local start end _flags n=0
  while read -r start end _flags; do
    [[ ${start} =~ ^0x0+$ && ${end} =~ ^0x0+$ ]] && continue
    n=$((n + 1))
    if [[ ${n} -eq 2 ]]; then
      printf '%s\n' $((end - start + 1))
      return 0
    fi
  done < <(head -n 6 "${P2P_SYSFS}/bus/pci/devices/$1/resource" 2>/dev/null)
  printf '0\n'
}

collect_userspace() {
  local dir=$1 v
  v=$(userspace_versions | sed 's/^/libnvidia-ml.so./')
  {
    printf '%s\n' "${v:-userspace-libraries: none (no versioned libnvidia-ml or libcuda)}"
    printf 'userspace in charge: %s\n' "$(userspace_summary)"
  } >"${dir}/userspace.txt"
  manifest "${dir}" ok userspace.txt "the versioned libnvidia-ml and libcuda files in the library directories"
}

# collect_ours DIR: what nvidia-p2p installed, and whether it is loaded; where
# dpkg is, the version of the package nvidia-p2p-dkms and the other installed
# packages of NVIDIA kernel modules (doctor tells an upgrade of ours that
# waits for a reboot from another driver's module by them).
collect_ours() {
  local dir=$1 tags ko="" deb others
  tags=$(installed_module_tags | tr '\n' ' ')
  tags=${tags% }
  {
    printf 'nvidia-p2p-installed: %s\n' "${tags:-none}"
    if command -v dpkg-query >/dev/null 2>&1; then
      deb=$({ dpkg-query -W -f '${db:Status-Abbrev} ${Version}\n' "${P2P_PKG_NAME}" 2>/dev/null || true; } | sed -n -E 's/^ii +([^ ]+)$/\1/p')
      others=$({
        nvidia_kernel_packages dkms
        nvidia_kernel_packages prebuilt
      } | tr '\n' ' ')
      others=${others% }
      printf 'nvidia-p2p-dkms: %s\n' "${deb:-none}"
      printf 'other-nvidia-kernel-packages: %s\n' "${others:-none}"
    fi
    ko=$(find "${P2P_ROOT}/lib/modules/$(uname -r)/updates" -name 'nvidia.ko*' 2>/dev/null | head -n 1 || true)
    if [[ -n ${ko} && -n ${tags} ]] && command -v modinfo >/dev/null 2>&1; then
      printf 'nvidia-p2p-srcversion: %s\n' "$(modinfo -F srcversion "${ko}" 2>/dev/null)"
    fi
    if [[ -r ${P2P_SYSFS}/module/nvidia/srcversion ]]; then
      printf 'loaded-srcversion: %s\n' "$(cat "${P2P_SYSFS}/module/nvidia/srcversion")"
    fi
    if [[ -r ${P2P_SYSFS}/module/nvidia/version ]]; then
      printf 'loaded-version: %s\n' "$(cat "${P2P_SYSFS}/module/nvidia/version")"
    fi
  } >"${dir}/nvidia-p2p.txt"
  manifest "${dir}" ok nvidia-p2p.txt "build.sh's install state, ${P2P_SYSFS}/module/nvidia"
}

# collect_verify DIR: p2p-verify --json --quick into DIR/p2p-verify.json, with
# verify/p2p-verify where it is built, else one built now (doctor_verify_tool).
collect_verify() {
  local dir=$1 rc=0
  if ! doctor_verify_tool; then
    manifest "${dir}" "${P2P_VERIFY_STATUS}" p2p-verify.json "${P2P_VERIFY_WHY}"
    return 0
  fi
  timeout 600 "${P2P_VERIFY_BIN}" --json --quick >"${dir}/p2p-verify.json" 2>"${dir}/.verify.err" || rc=$?
  rm -f -- "${dir}/.verify.err"
  if [[ ${rc} -eq 124 ]]; then
    manifest "${dir}" failed p2p-verify.json "p2p-verify --json --quick did not finish in 600 s (a P2P hang?)"
  else
    manifest "${dir}" ok p2p-verify.json "p2p-verify --json --quick (exit ${rc}${P2P_VERIFY_WHY:+; ${P2P_VERIFY_WHY}})"
  fi
}

# doctor_find_nvcc: the CUDA compiler verify/Makefile would take: $NVCC, else
# $CUDA_HOME/bin/nvcc, nvcc on PATH, /usr/local/cuda/bin/nvcc; status 1: none.
doctor_find_nvcc() {
  local c
  if [[ -n ${NVCC:-} ]]; then
    command -v -- "${NVCC}" 2>/dev/null
    return
  fi
  for c in "${CUDA_HOME:+${CUDA_HOME}/bin/nvcc}" "$(command -v nvcc 2>/dev/null || true)" /usr/local/cuda/bin/nvcc; do
    if [[ -n ${c} && -x ${c} ]]; then
      printf '%s\n' "${c}"
      return 0
    fi
  done
  return 1
}

# doctor_verify_tool: P2P_VERIFY_BIN = verify/p2p-verify where it is built,
# else one built now with nvcc into a temporary directory (removed at exit;
# nothing is written beside the sources), said in P2P_VERIFY_WHY. Status 1,
# with P2P_VERIFY_STATUS (missing, failed) and P2P_VERIFY_WHY, when there is no
# nvcc or the build fails.
P2P_VERIFY_BIN=""
P2P_VERIFY_STATUS=""
P2P_VERIFY_WHY=""
doctor_verify_tool() {
  local nvcc
  P2P_VERIFY_BIN="${P2P_DATA_DIR}/verify/p2p-verify"
  [[ -x ${P2P_VERIFY_BIN} ]] && return 0
  if ! nvcc=$(doctor_find_nvcc); then
    P2P_VERIFY_STATUS=missing
    P2P_VERIFY_WHY="verify/p2p-verify is not built, and no nvcc was found to build it (NVCC, CUDA_HOME, PATH, /usr/local/cuda/bin): install the CUDA toolkit, or run build.sh verify --build-only where it is"
    return 1
  fi
  mk_temp_dir "${TMPDIR:-/tmp}"
  note "doctor --verify: building verify/p2p-verify with ${nvcc} into a temporary directory (build.sh verify --build-only keeps one; this may take a minute)"
  if ! make -s -C "${P2P_DATA_DIR}/verify" NVCC="${nvcc}" BUILD="${P2P_TMP}/build" VERIFY_BIN="${P2P_TMP}/p2p-verify" >&2; then
    P2P_VERIFY_STATUS=failed
    P2P_VERIFY_WHY="verify/p2p-verify could not be built with ${nvcc} (the compiler's messages are above)"
    return 1
  fi
  P2P_VERIFY_BIN="${P2P_TMP}/p2p-verify"
  P2P_VERIFY_WHY="built now with ${nvcc}"
}

# --- use by preflight and the pipeline -----------------------------------------

# The diagnosis before the install (--brief lines) and p2p-doctor's exit code,
# once per run; P2P_DOCTOR_PRE_RC is "skip" without a compiler.
P2P_DOCTOR_PRE=""
P2P_DOCTOR_PRE_RC=""

# doctor_preinstall_run [TAG]: collect this machine and diagnose it for the
# install of TAG, once; status 1 (said once) when the reader cannot be built.
doctor_preinstall_run() {
  local tag=${1:-} bundle
  local -a args=(--preinstall --brief)
  [[ -n ${tag} ]] && args+=(--tag "${tag}")
  [[ ${P2P_DOCTOR_PRE_RC} == skip ]] && return 1
  [[ -n ${P2P_DOCTOR_PRE_RC} ]] && return 0
  if ! command -v make >/dev/null 2>&1 || ! command -v "${CC:-cc}" >/dev/null 2>&1; then
    P2P_DOCTOR_PRE_RC=skip
    report warn "doctor: no make or C compiler to build its reader; skipped (build.sh doctor --collect DIR works without)"
    return 1
  fi
  doctor_build_tool
  mk_temp_dir "${TMPDIR:-/tmp}"
  bundle="${P2P_TMP}/bundle"
  mkdir -p "${bundle}"
  doctor_collect "${bundle}"
  P2P_DOCTOR_PRE_RC=0
  P2P_DOCTOR_PRE=$("${P2P_DOCTOR_BIN}" --from "${bundle}" "${args[@]}") || P2P_DOCTOR_PRE_RC=$?
}

# doctor_works_now [TAG]: when the loaded driver already gives every GPU pair
# P2P (topo -p2p r and w OK, nothing found that stops it), the line that says
# so, for preflight and the pipeline to print first.
doctor_works_now() {
  local kind pairs driver
  doctor_preinstall_run "${1:-}" || return 0
  while IFS=$'\t' read -r kind pairs driver; do
    [[ ${kind} == works ]] || continue
    [[ ${driver} != - ]] || driver=""
    report ok "doctor: P2P already works here with the loaded driver${driver:+ ${driver}}: nvidia-smi topo -p2p r and w report OK for all ${pairs} GPU pairs and nothing found stops it (build.sh verify checks that every byte arrives)"
  done <<<"${P2P_DOCTOR_PRE}"
}

# doctor_preinstall [TAG]: the diagnosis as report lines (preflight, and the
# pipeline before it builds): what would stop P2P after an install. Never
# fatal: the firmware or the GPUs can be changed after the install too.
doctor_preinstall() {
  local rc kind id sev cert subject text
  doctor_preinstall_run "${1:-}" || return 0
  rc=${P2P_DOCTOR_PRE_RC}
  while IFS=$'\t' read -r kind id sev cert subject text; do
    case ${kind} in
    gpu) report info "doctor: ${id} ${sev}, ${cert}: ${subject}" ;;
    finding)
      [[ ${id} != insufficient-data ]] || continue
      [[ ${subject} == machine ]] && subject=""
      report "$([[ ${sev} == blocks && ${cert} != possible ]] && echo warn || echo info)" \
        "doctor: ${id}${subject:+ (${subject})} [${sev}, ${cert}]: ${text}"
      ;;
    esac
  done <<<"${P2P_DOCTOR_PRE}"
  case ${rc} in
  0) report ok "doctor: nothing found that would stop P2P after the install" ;;
  "${EX_DOCTOR_BLOCKED}") report warn "doctor: the findings above would stop P2P with these modules too; details: build.sh doctor" ;;
  "${EX_DOCTOR_NO_PAIR}") report info "doctor: fewer than two NVIDIA GPUs found" ;;
  *) report info "doctor: not every GPU pair can be judged before the install; after it: build.sh verify, then build.sh doctor" ;;
  esac
}
