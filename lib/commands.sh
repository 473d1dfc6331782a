# shellcheck shell=bash
# lib/commands.sh: the whole pipeline (`build.sh <tag>`), list, check, verify
# and help. The stages themselves live in lib/<NN>-<stage>.sh.

help_all() {
  usage_synopsis all
  cat <<'EOF'

The whole pipeline for one driver tag:
  1 preflight  tools, headers for the target kernel, root (or sudo), Secure Boot,
               who provides the userspace driver (see build.sh help install:
               --userspace); doctor's findings that would stop
               P2P after the install (BIOS, IOMMU, BAR1, GPUs; never fatal)
  2 fetch      upstream source (GitHub, or offline --source: a git bundle or
               repository, a tarball, a tree) and the matching .run
               (not when the installed userspace is kept)
  3 verify     source tree against its pinned tree id, .run against its sha256
  4 patch      the family's patch series with quilt, fuzz 0
  5 build      kbuild against the kernel's headers; module checks; the DKMS source
  6 install    DKMS module nvidia-p2p/<tag> built for every kernel with headers
               (--no-dkms: this kernel's modules only), signed when a key is
               available, depmod override, P2P module options, depmod, initramfs
  7 userspace  kept (your distribution's packages of <tag>), or NVIDIA's .run
               with --no-kernel-modules; userspace version must equal the
               module version, else the install is rolled back (all but
               NVIDIA's .run, which cannot be undone: the error says so)
Then it tells you what to do next (reboot or reload, then `build.sh verify`).
Fetch, patch and build run as the calling user; install needs root (sudo is
used when available). Options are those of the stage commands; see
`build.sh help <command>`. One tag takes about 1 GiB of disk once built;
each stage checks the room it needs first (exit 17).
EOF
}

cmd_all() {
  local tag=""
  install_in_pipeline
  parse_stage_args all tag "$@"
  require_tag "${tag}"
  check_run_sha_arg "${tag}"
  family_load "${tag}"
  static_bar1_check "${tag}"
  if [[ ${P2P_DRY_RUN} -eq 1 ]]; then
    printf 'Plan for driver %s (family %s), changing nothing:\n' "${tag}" "${V_FAMILY[${tag}]}"
  fi
  preflight_pipeline "${tag}"
  cache_lock
  fetch_source "${tag}"
  if [[ ${P2P_NO_USERSPACE} -eq 0 ]]; then
    fetch_run "${tag}"
  fi
  patch_tree "${tag}" "$(default_patched_dir "${tag}")"
  build_modules "${tag}"
  pipeline_install "${tag}"
  if [[ ${P2P_DRY_PROBLEM} -ne 0 ]]; then
    exit "${P2P_DRY_PROBLEM}"
  fi
  next_steps "${tag}"
}

# pipeline_install TAG: in this process as root; otherwise through sudo, with
# the cache lock handed over (released here, taken again by the child).
pipeline_install() {
  local tag=$1 opt
  local -a args=(install "${tag}" --cache-dir "${P2P_CACHE_DIR}" --work-dir "${P2P_WORK_DIR}")
  if [[ ${P2P_DRY_RUN} -eq 1 ]] || is_root; then
    [[ ${P2P_DRY_RUN} -eq 1 ]] && ! is_root && printf 'would run the install step as root, through sudo\n'
    install_preflight "${tag}"
    install_all "${tag}"
    return 0
  fi
  [[ -n ${P2P_ROOT} ]] && args+=(--root "${P2P_ROOT}")
  # Every option of install that the pipeline takes too, as this run decided it.
  for opt in ${P2P_CMD_OPTS[install]}; do
    [[ " ${P2P_CMD_OPTS[all]} " == *" ${opt} "* ]] || continue
    handover_opt args "${opt}"
  done
  [[ ${P2P_VERBOSE} -eq 1 ]] && args+=(--verbose)
  [[ ${P2P_YES} -eq 1 ]] && args+=(--yes)
  [[ ${P2P_LOCK_WAIT} -gt 0 ]] && args+=(--lock-wait "${P2P_LOCK_WAIT}")
  stage install "as root: sudo $0 ${args[*]}"
  # Asked for the password while this run still holds the cache's lock, so
  # no other run takes it while sudo waits for the user.
  sudo -v || die "${EX_PREFLIGHT}" "sudo refused; the install step needs root: sudo $0 ${args[*]}"
  lock_release "${P2P_CACHE_DIR}"
  sudo -- "$0" "${args[@]}"
}

# handover_opt ARRAY OPTION: appends OPTION, as this run decided it, to the
# arguments (the array named ARRAY) of the install step run through sudo;
# nothing when it is not set.
handover_opt() {
  local -n handover_args=$1
  case $2 in
  # The kernel as this process has it: --no-dkms installs the modules built
  # for P2P_KREL; DKMS builds for the --kernel given, else for every kernel
  # with headers (and no --kernel is given then, as when run as root).
  --kernel) [[ -n ${P2P_KERNEL} || ${P2P_NO_DKMS} -eq 1 ]] && handover_args+=(--kernel "${P2P_KREL}") ;;
  --userspace)
    if [[ ${P2P_NO_USERSPACE} -eq 1 ]]; then
      handover_args+=(--userspace keep)
    else
      handover_args+=(--userspace run)
    fi
    ;;
  --no-userspace) ;; # handed over as --userspace keep
  --no-dkms) [[ ${P2P_NO_DKMS} -eq 1 ]] && handover_args+=(--no-dkms) ;;
  --nvlink) [[ -n ${P2P_NVLINK} ]] && handover_args+=(--nvlink "${P2P_NVLINK}") ;;
  --force-static-bar1) [[ -n ${P2P_STATIC_BAR1} ]] && handover_args+=(--force-static-bar1 "${P2P_STATIC_BAR1}") ;;
  --sign-generate) [[ ${P2P_SIGN_GENERATE} -eq 1 ]] && handover_args+=(--sign-generate) ;;
  --sign-key) [[ ${P2P_SIGN_SOURCE} == user ]] && handover_args+=(--sign-key "${P2P_SIGN_KEY}") ;;
  --sign-cert) [[ ${P2P_SIGN_SOURCE} == user ]] && handover_args+=(--sign-cert "${P2P_SIGN_CERT}") ;;
  --run) [[ -n ${P2P_RUN_FILE} ]] && handover_args+=(--run "${P2P_RUN_FILE}") ;;
  --run-sha256) [[ -n ${P2P_RUN_SHA256} ]] && handover_args+=(--run-sha256 "${P2P_RUN_SHA256}") ;;
  *) die "${EX_FAIL}" "internal: the pipeline takes install's option $2 but does not hand it to the install step (lib/commands.sh)" ;;
  esac
  return 0
}

next_steps() {
  local tag=$1
  cat <<EOF

Next steps:
  1. Reboot, so the new modules and their options are used. (Without a display
     server on the GPUs you may instead reload them:
       sudo rmmod nvidia_drm nvidia_modeset nvidia_uvm nvidia && sudo modprobe nvidia)
  2. Check that P2P really works between every GPU pair:
       ./build.sh verify
  P2P can be switched off without rebuilding: see docs/how-it-works.md, "Switching P2P off".
EOF
  verbose "pipeline for ${tag} done"
}

help_list() {
  usage_synopsis list
  cat <<'EOF'

The supported tags, grouped by patch family (oldest first). For each family:
its tags, the patches it carries and the ones it leaves out. For each tag its
columns, which the list explains after its tables too:
EOF
  list_legend
}

cmd_list() {
  local extra="" tag fam src run width=8
  local -a families=()
  parse_stage_args list extra "$@"
  [[ -z ${extra} ]] || die "${EX_USAGE}" "list takes no tag"
  versions_load
  for tag in "${V_TAGS[@]}"; do
    [[ " ${families[*]-} " == *" ${V_FAMILY[${tag}]} "* ]] || families+=("${V_FAMILY[${tag}]}")
    [[ ${#V_TESTED[${tag}]} -le ${width} ]] || width=${#V_TESTED[${tag}]}
  done
  for fam in "${families[@]}"; do
    list_family "${fam}"
    printf '  %-12s %-*s %-7s %s\n' TAG "${width}" VERIFIED SOURCE RUN
    for tag in "${V_TAGS[@]}"; do
      [[ ${V_FAMILY[${tag}]} == "${fam}" ]] || continue
      src=no
      [[ -f "$(cache_src_dir "${tag}").pin" ]] && src=cached
      run=no
      [[ -f $(cache_run_file "${tag}") ]] && run=cached
      [[ ${V_RUN_SHA[${tag}]} == unknown && ${run} == no ]] && run="sha256 unknown"
      printf '  %-12s %-*s %-7s %s\n' "${tag}" "${width}" "${V_TESTED[${tag}]}" "${src}" "${run}"
    done
  done
  list_legend
}

# list_legend: what the columns of list mean, after the tables.
list_legend() {
  cat <<'EOF'

VERIFIED  what this project checked for the tag (versions.conf, column "tested"):
          apply: the series applies at fuzz 0; compile: every translation unit
          it changes compiles; build:<k>: all five modules build for Debian's
          kernel series <k>; load:<k>: nvidia.ko's init ran under QEMU on <k>;
          bisect: every prefix of the series builds. None on consumer GPUs.
SOURCE    cached: a verified upstream source is in this machine's cache
          (build.sh fetch <tag>); no: the next run fetches it.
RUN       NVIDIA's .run for the tag: cached, or no (fetched when needed);
          "sha256 unknown": versions.conf pins no checksum, so a download
          needs --run-sha256 HEX (or give --run FILE, or --userspace keep).
EOF
}

# list_family FAMILY: its heading: tags, the patches carried and left out.
list_family() {
  local fam=$1 tag first="" last="" n=0 patches dropped
  for tag in "${V_TAGS[@]}"; do
    [[ ${V_FAMILY[${tag}]} == "${fam}" ]] || continue
    n=$((n + 1))
    [[ -n ${first} ]] || first=${tag}
    last=${tag}
  done
  patches=$(family_patches "${first}") || exit "$?"
  dropped=$(family_dropped "$(family_dir "${first}")" | cut -f1) || exit "$?"
  printf '\nfamily %s: %s tag%s, %s .. %s\n' "${fam}" "${n}" "$([[ ${n} -eq 1 ]] || printf s)" "${first}" "${last}"
  printf '  patches: %s\n' "$(short_names "${patches}")"
  [[ -z ${dropped} ]] || printf '  left out (see patches/%s/%s): %s\n' "${fam}" "${DROPPED_FILE}" "$(short_names "${dropped}")"
}

# short_names LIST: "p2p-0001 p2p-0002 ..." from patch file names, on one line.
short_names() {
  sed -E 's/^((compat|p2p)-[0-9]{4}).*/\1/' <<<"$1" | tr '\n' ' ' | sed 's/ $//'
}

help_check() {
  usage_synopsis check
  cat <<'EOF'

Exit 0 when <tag> is supported (listed in versions.conf with a complete patch
family), 3 when it is not (a release newer than versions.conf knows can be
added with `build.sh rebase <tag>`), 4 when the data for it is malformed.
Prints the tag's family, what was verified, the patches of its family, and
the patches its family leaves out, with the reason. A compat patch whose use
depends on the source (upstream may have its fix, or lack the code it
changes) is marked "applied" or "left out", with why, when the tag's
verified source is in the cache; before that, with what decides it.
EOF
}

cmd_check() {
  local tag="" patches dir name reason src=""
  parse_stage_args check tag "$@"
  require_tag "${tag}"
  dir=$(family_dir "${tag}")
  patches=$(family_patches "${tag}") || exit "$?"
  [[ -r ${dir}/modprobe.conf ]] || die "${EX_DATA}" "family ${V_FAMILY[${tag}]} has no modprobe.conf"
  printf '%s: supported, family %s, .run sha256 %s\n' "${tag}" "${V_FAMILY[${tag}]}" "${V_RUN_SHA[${tag}]}"
  printf '  verified: %s\n' "${V_TESTED[${tag}]}"
  [[ -f "$(cache_src_dir "${tag}").pin" ]] && src=$(cache_src_dir "${tag}")
  while IFS= read -r name; do
    [[ -n ${name} ]] || continue
    printf '  %s%s\n' "${name}" "$(check_patch_use "${dir}/${name}" "${src}")"
  done <<<"${patches}"
  while IFS=$'\t' read -r name reason; do
    [[ -n ${name} ]] && printf '  left out: %s: %s\n' "${name}" "${reason}"
  done < <(family_dropped "${dir}")
  return 0
}

# check_patch_use PATCHFILE SRC: how check shows a compat patch whose use
# depends on the source ("  (...)"), nothing for one always applied. With SRC
# (the tag's verified source) what patch_tree does with it: applied, or left
# out and why; without it, what decides.
check_patch_use() {
  local patch=$1 src=$2 upstream needs when why
  upstream=$(applied_upstream_check "${patch}") || exit "$?"
  needs=$(applies_if_check "${patch}") || exit "$?"
  [[ -n ${upstream}${needs} ]] || return 0
  if [[ -z ${src} ]]; then
    when=""
    [[ -z ${upstream} ]] || when="left out where ${upstream% *} has ${upstream#* } (upstream has the fix)"
    [[ -z ${needs} ]] || when+="${when:+; }only where ${needs% *} has ${needs#* }"
    printf '  (source not fetched yet: %s)' "${when}"
  elif upstream_has "${src}" "${patch}"; then
    if [[ -e ${src}/${upstream% *} ]]; then
      printf '  (left out: upstream has the fix, %s has %s)' "${upstream% *}" "${upstream#* }"
    else
      printf '  (left out: the source has no %s, nothing to fix)' "${upstream% *}"
    fi
  elif lacks_code "${src}" "${patch}"; then
    printf '  (left out: %s lacks %s, the code it changes)' "${needs% *}" "${needs#* }"
  else
    why=""
    [[ -z ${upstream} ]] || why="${upstream% *} lacks ${upstream#* }, the fix upstream gets later"
    [[ -z ${needs} ]] || why+="${why:+; }${needs% *} has ${needs#* }"
    printf '  (applied: %s)' "${why}"
  fi
}

help_verify() {
  usage_synopsis verify
  cat <<'EOF'

Build (make -C verify) and run the P2P verification tool: peer access matrix,
integrity-checked peer copies and peer loads/stores, bandwidth and latency
matrices with P2P on and off, and NCCL all-reduce with P2P allowed and
disallowed. Needs the CUDA toolkit (nvcc) to build; NCCL is optional.
Its exit code is the verdict (0 = every pair has P2P and every byte arrived);
see `verify/p2p-verify --help` and verify/README.md. Before it runs,
build.sh's own codes: 10 without nvcc, 8 when the tool does not compile. When P2P fails (20, 21,
23) it points to `build.sh doctor --verify`, which says why.

  --build-only   only compile the tool

build.sh's global options (--verbose/-v, --help/-h, --dry-run...) are taken
wherever they stand; p2p-verify's options of the same name go after `--`:
  build.sh verify -- --verbose --json
EOF
}

cmd_verify() {
  local -a tool_args=()
  # verify's own options (its synopsis); p2p-verify parses the others
  while [[ $# -gt 0 ]]; do
    if [[ " ${P2P_CMD_OPTS[verify]} " == *" $1 "* ]]; then
      set_opt_flag "$1"
    else
      tool_args+=("$1")
    fi
    shift
  done
  stage verify "building verify/p2p-verify"
  need_cmd make make
  # the Makefile's own test for nvcc (NVCC, CUDA_HOME, PATH, /usr/local/cuda)
  run make -s -C "${P2P_DATA_DIR}/verify" nvcc-present >&2 ||
    die "${EX_PREFLIGHT}" "the CUDA toolkit's nvcc is required to build verify/p2p-verify, and none was found (Debian: nvidia-cuda-toolkit, or NVIDIA's CUDA toolkit; nvcc on PATH, or CUDA_HOME or NVCC set)"
  run make -s -C "${P2P_DATA_DIR}/verify" >&2 || die "${EX_BUILD}" "could not build verify/p2p-verify with nvcc (its errors above)"
  [[ ${P2P_VERIFY_BUILD_ONLY} -eq 1 ]] && return 0
  [[ ${P2P_DRY_RUN} -eq 1 ]] && { printf 'would run: %s\n' "$(quote_cmd "${P2P_DATA_DIR}/verify/p2p-verify" "${tool_args[@]+"${tool_args[@]}"}")"; return 0; }
  stage verify "running p2p-verify"
  local rc=0
  "${P2P_DATA_DIR}/verify/p2p-verify" "${tool_args[@]+"${tool_args[@]}"}" || rc=$?
  case ${rc} in
  20 | 21 | 23) note "P2P failed its verification (exit ${rc}): build.sh doctor --verify names the cause (IOMMU, ACS, BAR1, the module, its options, the display...)" ;;
  esac
  return "${rc}"
}

help_exit_codes() {
  printf 'Exit codes of build.sh:\n'
  exit_code_table | sed 's/^/  /'
  printf 'build.sh verify exits with the verdict of verify/p2p-verify (see its --help),\n'
  printf 'or, before it runs, 10 (no nvcc) or 8 (the tool does not compile).\n'
}

help_help() {
  cat <<'EOF'
Usage: build.sh help [<command> | all | exit-codes | help]

Without a topic: the overview of commands and global options (as
build.sh --help). With a command: its help (as build.sh <command> --help);
all (or pipeline, tag): the pipeline's, build.sh <tag>; exit-codes: every
exit code and its meaning; help: this text. Exit 0; 2 for a topic it does
not know.
EOF
}

usage() {
  cat <<'EOF'
Usage: build.sh <tag> [options]          fetch, verify, patch, build and install driver <tag>
       build.sh <command> [args] [options]

PCIe peer-to-peer (BAR1 P2P) for consumer NVIDIA GPUs (RTX 3090, RTX 4090) on
NVIDIA's open kernel modules, from verified upstream sources.

Commands:
  fetch <tag>       put the verified upstream source (and .run) into the cache
  patch <tag>       apply the patch series at fuzz 0 to a copy of the source
  build <tag>       build the patched modules for a kernel
  install <tag>     install built modules, the matching userspace .run, the P2P options
  uninstall         remove what install put in place
  package <tag>     a Debian package (DKMS source) of the patched driver
  repo <dir> <tag>...  a signed apt repository of those packages, for fleets
  container <tag>   an OCI image of the patched driver for NVIDIA's GPU Operator
  preflight         report P2P-relevant facts about this machine
  doctor            why P2P works or not here, pair by pair (or in a bundle)
  verify            build and run the P2P verification tool
  list              supported tags by family, and what is verified for each
  check <tag>       exit 0 if <tag> is supported
  rebase <tag>      bring a release versions.conf does not list into support
  help [command]    this text, a command's help, or `help exit-codes`

Global options:
  --cache-dir DIR   verified sources, .run files, logs, ccache
                    (default: ${XDG_CACHE_HOME:-~/.cache}/nvidia-p2p)
  --work-dir DIR    patched trees, builds (default: <cache-dir>/work)
  --root DIR        install into DIR instead of / (staging, tests): modules, /etc,
                    state, depmod; update-initramfs/dracut (when DIR/boot has an
                    image) and NVIDIA's .run run on this system as they are, so
                    stage with --no-userspace: a userspace driver in DIR must
                    be <tag>; with none there, the modules are staged alone
                    (the system that uses DIR needs <tag>'s userspace and GSP
                    firmware)
  --lock-wait SECS  wait up to SECS for another run's lock (default: exit 11 at once)
  --dry-run         print every step, change nothing
  --yes, -y         do not ask for confirmation
  --verbose, -v     show command output and details
  --help, -h        help (after a command: that command's help)
  --version         print build.sh's version

Each run that does work writes a log file to <cache-dir>/logs/ and names it
on its first line (build.sh: log: FILE); list, check, preflight, doctor,
help and --dry-run change nothing and write none. NO_COLOR is honoured.
Exit codes: build.sh help exit-codes. Documentation: README.md and docs/.
EOF
}

# help_page TOPIC: the page of docs/ that documents TOPIC (a command, the
# pipeline or exit-codes), for the last line of its help.
help_page() {
  case $1 in
  all | pipeline | tag | install | uninstall) printf 'docs/install.md\n' ;;
  package | repo) printf 'docs/packaging.md\n' ;;
  doctor) printf 'docs/diagnosis.md\n' ;;
  verify) printf 'docs/verify-tool.md\n' ;;
  rebase) printf 'docs/families-and-rebase.md\n' ;;
  container) printf 'docs/kubernetes.md\n' ;;
  *) printf 'docs/commands.md\n' ;;
  esac
}

cmd_help() {
  local topic=${1:-}
  case ${topic} in
  "") usage ;;
  exit-codes) help_exit_codes ;;
  fetch | patch | build | install | uninstall | preflight | verify | list | check | rebase | package | container | repo | doctor) "help_${topic}" ;;
  all | pipeline | tag) help_all ;;
  help) help_help ;;
  *) die "${EX_USAGE}" "no help for '${topic}' (commands: fetch patch build install uninstall preflight verify list check rebase package container repo doctor; also all, exit-codes, help)" ;;
  esac
  [[ -z ${topic} ]] || printf 'More: %s\n' "$(help_page "${topic}")"
}
