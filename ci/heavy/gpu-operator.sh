# shellcheck shell=bash
# ci/heavy/gpu-operator.sh: NVIDIA GPU Operator's own checks of a driver container,
# run against this project's image without a cluster (sourced by
# ci/heavy/container-test.sh, on an unpacked image in a chroot, and by
# test/unit/container.bats, on a fixture tree). The operator's scripts are
# vendored in test/fixtures/gpu-operator (SOURCE there says from where):
#
#   op_probe ROOT [chroot|reroot]   the startup probe: unmodified in a chroot
#       of ROOT, or (reroot) with its /run/nvidia and /sys/module paths
#       prefixed by ROOT for a tree that is not a chroot; nvidia-smi is the
#       caller's (the one call that needs a GPU: a stub first on PATH)
#   op_prestop ROOT [chroot|reroot] the preStop command, the same way
#   op_validator_driver ROOT        the driver validator's search in the
#       published root: libnvidia-ml.so.1 and nvidia-smi where it looks,
#       symbolic links resolved (a dangling one is missing); prints both
#       resolved paths, status 1 when one is missing
#
# Each prints what it ran and what that printed; the status is the check's.

OP_FIXTURES="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../test/fixtures/gpu-operator" && pwd -P)"

# The validator's search order (cmd/nvidia-validator, internal/driver/root.go
# 30-44 at NVIDIA/gpu-operator a22dbf67).
OP_LIB_DIRS=(/ /usr/lib64 /usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu /lib64 /lib/x86_64-linux-gnu /lib/aarch64-linux-gnu)
OP_BIN_DIRS=(/ /usr/bin /usr/sbin /bin /sbin)

# op_text FILE ROOT MODE: FILE's text as run: as is, or re-rooted.
op_text() {
  if [[ $3 == reroot ]]; then
    sed -e "s#/run/nvidia/#$2/run/nvidia/#g" -e "s#/sys/module/#$2/sys/module/#g" "$1"
  else
    cat -- "$1"
  fi
}

# op_run ROOT MODE SCRIPT-TEXT: sh runs the text, in a chroot of ROOT or here.
op_run() {
  local root=$1 mode=$2 text=$3
  if [[ ${mode} == chroot ]]; then
    chroot "${root}" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      /bin/sh -c "${text}"
  else
    sh -c "${text}"
  fi
}

op_probe() {
  local root=$1 mode=${2:-chroot}
  echo "startup-probe.sh (NVIDIA/gpu-operator, test/fixtures/gpu-operator/SOURCE):"
  if [[ ${mode} == chroot ]]; then
    # where the operator mounts it (its ConfigMap, 0755), run as its startupProbe does
    install -D -m 0755 -- "${OP_FIXTURES}/startup-probe.sh" "${root}/usr/local/bin/startup-probe.sh"
    op_run "${root}" chroot "sh /usr/local/bin/startup-probe.sh"
  else
    op_run "${root}" reroot "$(op_text "${OP_FIXTURES}/startup-probe.sh" "${root}" reroot)"
  fi
}

op_prestop() {
  local root=$1 mode=${2:-chroot}
  echo "preStop: $(cat "${OP_FIXTURES}/prestop.cmd")"
  op_run "${root}" "${mode}" "$(op_text "${OP_FIXTURES}/prestop.cmd" "${root}" "${mode}")"
}

# op_find ROOT NAME DIR...: the first DIR/NAME under ROOT that resolves (its
# links followed inside ROOT), as a path under ROOT.
op_find() {
  local root=$1 name=$2 d p
  shift 2
  for d in "$@"; do
    p=$(op_resolve "${root}" "${d%/}/${name}") || continue
    [[ -f ${root}${p} ]] || continue
    printf '%s\n' "${p}"
    return 0
  done
  return 1
}

# op_resolve ROOT PATH: PATH with its symbolic links resolved inside ROOT,
# status 1 when it does not resolve. An absolute link target does not: the
# validator resolves ROOT/PATH (filepath.EvalSymlinks) in its own container,
# where an absolute target is outside the driver root (Debian's
# /etc/alternatives links, for one).
op_resolve() {
  local root=$1 path=$2 out="" part target hops=0
  local -a parts
  IFS=/ read -r -a parts <<<"${path#/}"
  while [[ ${#parts[@]} -gt 0 ]]; do
    part=${parts[0]}
    parts=("${parts[@]:1}")
    case ${part} in
    "" | .) continue ;;
    ..) out=${out%/*} && continue ;;
    esac
    if [[ -L ${root}${out}/${part} ]]; then
      [[ $((hops += 1)) -le 40 ]] || return 1
      target=$(readlink -- "${root}${out}/${part}")
      [[ ${target} != /* ]] || return 1
      local -a more
      IFS=/ read -r -a more <<<"${target#/}"
      parts=("${more[@]}" "${parts[@]}")
      continue
    fi
    [[ -e ${root}${out}/${part} ]] || return 1
    out+="/${part}"
  done
  printf '%s\n' "${out:-/}"
}

op_validator_driver() {
  local root=$1 lib smi
  lib=$(op_find "${root}" libnvidia-ml.so.1 "${OP_LIB_DIRS[@]}") ||
    { echo "validator: libnvidia-ml.so.1 in none of ${OP_LIB_DIRS[*]} of the driver root" && return 1; }
  smi=$(op_find "${root}" nvidia-smi "${OP_BIN_DIRS[@]}") ||
    { echo "validator: nvidia-smi in none of ${OP_BIN_DIRS[*]} of the driver root" && return 1; }
  [[ -x ${root}${smi} ]] || { echo "validator: ${smi} is not executable" && return 1; }
  printf 'validator: libnvidia-ml.so.1 -> %s\nvalidator: nvidia-smi -> %s\n' "${lib}" "${smi}"
}
