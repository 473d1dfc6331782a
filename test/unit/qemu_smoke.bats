#!/usr/bin/env bats
# shellcheck source-path=SCRIPTDIR/../..
# Unit tests for ci/heavy/qemu-smoke.sh: the console-log verdict (smoke_verdict)
# against recorded QEMU console logs, option parsing, and the exit status
# for missing prerequisites. Nothing here boots QEMU or uses the network.
#
# Fixtures in test/fixtures/qemu/ are real console logs of ci/heavy/qemu-smoke.sh
# runs on Debian 6.1.0-56-amd64 (CRLF as the serial console writes them,
# terminal escapes removed). pass.log is from the real 565.57.01 nvidia.ko;
# the others are from a small stand-in module named nvidia.ko that uses one
# drm export and then prints the NVRM line, panics, oopses or sleeps:
#   pass.log                  the nvidia.ko init ran: NVRM line, insmod rc=19
#   unknown-symbol.log        nvidia.ko loaded without its dependency drm
#   invalid-module-format.log nvidia.ko built for 6.1.0-50-amd64
#   timeout.log               QEMU stopped by timeout during early boot
#   hang-in-init.log          module init hung; QEMU stopped by timeout
#   panic.log                 module init called panic()
#   oops.log                  module init dereferenced NULL

bats_require_minimum_version 1.5.0

setup() {
  bats_load_library bats-support
  bats_load_library bats-assert
  REPO_ROOT="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
  SCRIPT="$REPO_ROOT/ci/heavy/qemu-smoke.sh"
  FIXTURES="$REPO_ROOT/test/fixtures/qemu"
  # shellcheck source=ci/heavy/qemu-smoke.sh
  source "$SCRIPT"
  # Sourcing turned on nounset and pipefail, which bats does not expect;
  # errexit stays on, as bats needs it to fail a test on any failed command.
  set +u +o pipefail
  MODULES="$BATS_TEST_TMPDIR/modules"
  mkdir -p "$MODULES"
  : >"$MODULES/nvidia.ko"
}

# Write a small console log from the given lines (LF line ends).
make_log() {
  local file="$BATS_TEST_TMPDIR/console.log"
  printf '%s\n' "$@" >"$file"
  printf '%s\n' "$file"
}

# A directory of stub commands: each named tool prints nothing and fails,
# except modinfo, which prints $STUB_VERMAGIC.
make_stubs() {
  local dir="$BATS_TEST_TMPDIR/stubs" tool
  mkdir -p "$dir"
  for tool in "$@"; do
    printf '#!/bin/sh\nexit 99\n' >"$dir/$tool"
    chmod +x "$dir/$tool"
  done
  cat >"$dir/modinfo" <<'EOF'
#!/bin/sh
echo "$STUB_VERMAGIC"
EOF
  chmod +x "$dir/modinfo"
  printf '%s\n' "$dir"
}

# stderr of the last "run --separate-stderr" contains TEXT.
stderr_has() {
  # shellcheck disable=SC2154 # $stderr is set by bats' run --separate-stderr
  [[ "$stderr" == *"$1"* ]] || fail "stderr does not contain '$1': $stderr"
}

# stderr of the last "run --separate-stderr" is exactly TEXT.
stderr_is() {
  [[ "$stderr" == "$1" ]] || fail "stderr is not '$1': $stderr"
}

ALL_TOOLS=(qemu-system-x86_64 cpio dpkg-deb depmod modprobe timeout apt-get apt-cache)

# --- smoke_verdict on recorded logs -----------------------------------------

@test "verdict: pass log passes with the summary text" {
  run smoke_verdict "$FIXTURES/pass.log"
  assert_success
  assert_output "PASS nvidia.ko init ran on 6.1.0-56-amd64 (NVRM: No NVIDIA GPU found, ENODEV)"
}

@test "verdict: pass log passes when the expected release matches" {
  run smoke_verdict "$FIXTURES/pass.log" expect-pass 6.1.0-56-amd64
  assert_success
}

@test "verdict: pass log fails when the guest booted another release" {
  run smoke_verdict "$FIXTURES/pass.log" expect-pass 6.12.117+deb12-amd64
  assert_failure 1
  assert_output "FAIL guest booted 6.1.0-56-amd64, expected 6.12.117+deb12-amd64"
}

@test "verdict: pass log with LF line ends passes too" {
  local lf="$BATS_TEST_TMPDIR/lf.log"
  tr -d '\r' <"$FIXTURES/pass.log" >"$lf"
  run smoke_verdict "$lf"
  assert_success
  assert_output --partial "PASS nvidia.ko init ran"
}

@test "verdict: unknown symbol fails and names the symbol" {
  run smoke_verdict "$FIXTURES/unknown-symbol.log"
  assert_failure 1
  assert_output "FAIL nvidia.ko has unresolved symbols on 6.1.0-56-amd64 (Unknown symbol, 1): drm_format_info"
}

@test "verdict: invalid module format fails with the kernel's reason" {
  run smoke_verdict "$FIXTURES/invalid-module-format.log"
  assert_failure 1
  assert_output --regexp '^FAIL nvidia\.ko rejected on 6\.1\.0-56-amd64: invalid module format \(rc=8 ENOEXEC: nvidia: disagrees about version of symbol module_layout\)$'
}

@test "verdict: timeout during boot fails: no markers" {
  run smoke_verdict "$FIXTURES/timeout.log"
  assert_failure 1
  assert_output --partial "FAIL no SMOKE markers in the console log"
}

@test "verdict: hang in module init fails: insmod did not finish" {
  run smoke_verdict "$FIXTURES/hang-in-init.log"
  assert_failure 1
  assert_output "FAIL /init started but insmod nvidia.ko did not finish on 6.1.0-56-amd64 (hang in module init, or timeout)"
}

@test "verdict: panic fails with the panic message" {
  run smoke_verdict "$FIXTURES/panic.log"
  assert_failure 1
  assert_output "FAIL kernel panic: smoke-dummy: deliberate panic in module init"
}

@test "verdict: oops fails" {
  run smoke_verdict "$FIXTURES/oops.log"
  assert_failure 1
  assert_output "FAIL kernel oops: BUG: kernel NULL pointer dereference, address: 0000000000000000"
}

@test "verdict: missing or empty log fails" {
  run smoke_verdict "$BATS_TEST_TMPDIR/nonexistent.log"
  assert_failure 1
  assert_output --partial "is missing or empty"
  : >"$BATS_TEST_TMPDIR/empty.log"
  run smoke_verdict "$BATS_TEST_TMPDIR/empty.log"
  assert_failure 1
  assert_output --partial "is missing or empty"
}

# --- smoke_verdict, expect-rejected (--sig-enforce) -------------------------

sig_log() {
  make_log "[    0.09] Kernel command line: console=ttyS0 loglevel=6 panic=-1${SIG_CMDLINE- module.sig_enforce=1}" \
    "SMOKE init start release=6.1.0-56-amd64" "SMOKE insmod dep drm rc=0" "$@" "SMOKE done"
}

@test "verdict expect-rejected: an unsigned nvidia.ko refused with EKEYREJECTED passes, naming the kernel's reason" {
  run smoke_verdict "$(sig_log "insmod: can't insert '/smoke/nvidia/nvidia.ko': Key was rejected by service" \
    "SMOKE insmod nvidia rc=129" "SMOKE dmesg nvidia: [    3.10] Loading of unsigned module is rejected")" expect-rejected 6.1.0-56-amd64
  assert_success
  assert_output "PASS nvidia.ko refused on 6.1.0-56-amd64 under module.sig_enforce=1: insmod rc=129 (EKEYREJECTED, signature rejected), kernel: Loading of unsigned module is rejected"
  run smoke_verdict "$(sig_log "SMOKE insmod nvidia rc=129" "SMOKE dmesg nvidia: [    3.10] Loading of module with unavailable key is rejected")" expect-rejected
  assert_success
  assert_output --partial "kernel: Loading of module with unavailable key is rejected"
}

@test "verdict expect-rejected: a module that loads, or is refused for another reason, fails" {
  run smoke_verdict "$(sig_log "SMOKE insmod nvidia rc=19" "SMOKE dmesg nvidia: NVRM: No NVIDIA GPU found.")" expect-rejected
  assert_failure 1
  assert_output --partial "signatures are not enforced"
  run smoke_verdict "$(sig_log "SMOKE insmod nvidia rc=8")" expect-rejected
  assert_failure 1
  assert_output --partial "but not for its signature: rc=8"
  run smoke_verdict "$(sig_log "SMOKE insmod nvidia rc=129")" expect-rejected
  assert_failure 1
  assert_output --partial "but not for its signature: rc=129"
}

@test "verdict expect-rejected: a boot without module.sig_enforce=1 fails" {
  SIG_CMDLINE="" run smoke_verdict "$(SIG_CMDLINE="" sig_log "SMOKE insmod nvidia rc=129" "SMOKE dmesg nvidia: Loading of unsigned module is rejected")" expect-rejected
  assert_failure 1
  assert_output --partial "lacks module.sig_enforce=1"
}

# --- smoke_verdict, --expect-fail mode --------------------------------------

@test "verdict expect-fail: invalid module format passes" {
  run smoke_verdict "$FIXTURES/invalid-module-format.log" expect-fail
  assert_success
  assert_output --partial "PASS expected failure: nvidia.ko rejected on 6.1.0-56-amd64 (rc=8 ENOEXEC"
}

@test "verdict expect-fail: unknown symbol passes (rc != 0, init did not run)" {
  run smoke_verdict "$FIXTURES/unknown-symbol.log" expect-fail
  assert_success
  assert_output --partial "rc=2"
}

@test "verdict expect-fail: a module whose init ran fails" {
  run smoke_verdict "$FIXTURES/pass.log" expect-fail
  assert_failure 1
  assert_output --partial "but its init ran"
}

@test "verdict expect-fail: panic and timeout still fail" {
  run smoke_verdict "$FIXTURES/panic.log" expect-fail
  assert_failure 1
  assert_output --partial "FAIL kernel panic"
  run smoke_verdict "$FIXTURES/timeout.log" expect-fail
  assert_failure 1
  assert_output --partial "FAIL no SMOKE markers"
}

@test "verdict expect-fail: insmod success fails" {
  local log
  log="$(make_log "SMOKE init start release=6.1.0-56-amd64" "SMOKE insmod nvidia rc=0" "SMOKE done")"
  run smoke_verdict "$log" expect-fail
  assert_failure 1
  assert_output --partial "but insmod succeeded (rc=0)"
}

# --- smoke_verdict, synthetic logs for the remaining branches ---------------

@test "verdict: ENODEV without the NVRM line fails" {
  local log
  log="$(make_log "SMOKE init start release=6.1.0-56-amd64" "SMOKE insmod nvidia rc=19" "SMOKE done")"
  run smoke_verdict "$log"
  assert_failure 1
  assert_output --partial "failed with ENODEV"
  assert_output --partial "is missing"
}

@test "verdict: NVRM line with another rc fails" {
  local log
  log="$(make_log "SMOKE init start release=6.1.0-56-amd64" "[    3.1] NVRM: No NVIDIA GPU found." \
    "SMOKE insmod nvidia rc=22" "SMOKE done")"
  run smoke_verdict "$log"
  assert_failure 1
  assert_output --partial "insmod rc=22 (EINVAL), expected 19 (ENODEV)"
}

@test "verdict: insmod success without a GPU fails" {
  local log
  log="$(make_log "SMOKE init start release=6.1.0-56-amd64" "SMOKE insmod nvidia rc=0" "SMOKE done")"
  run smoke_verdict "$log"
  assert_failure 1
  assert_output --partial "succeeded on 6.1.0-56-amd64 although there is no NVIDIA GPU"
}

@test "verdict: a dependency that does not load fails" {
  local log
  log="$(make_log "SMOKE init start release=6.1.0-56-amd64" "SMOKE insmod dep drm rc=0" \
    "SMOKE insmod dep drm_kms_helper rc=2" "[    3.1] NVRM: No NVIDIA GPU found." \
    "SMOKE insmod nvidia rc=19" "SMOKE done")"
  run smoke_verdict "$log"
  assert_failure 1
  assert_output "FAIL dependency drm_kms_helper of the nvidia modules did not load on 6.1.0-56-amd64 (rc=2 ENOENT, unknown symbol or parameter)"
}

@test "verdict: guest that stops before SMOKE done fails" {
  local log
  log="$(make_log "SMOKE init start release=6.1.0-56-amd64" "[    3.1] NVRM: No NVIDIA GPU found." \
    "SMOKE insmod nvidia rc=19")"
  run smoke_verdict "$log"
  assert_failure 1
  assert_output --partial "guest stopped before /init finished"
}

@test "verdict: kernel warning after /init started fails, one during boot does not" {
  local log
  log="$(make_log "[    1.0] WARNING: CPU: 0 PID: 1 at arch/x86/kernel/boot.c:1 early+0x1/0x2" \
    "SMOKE init start release=6.1.0-56-amd64" "[    3.1] NVRM: No NVIDIA GPU found." \
    "SMOKE insmod nvidia rc=19" "SMOKE done")"
  run smoke_verdict "$log"
  assert_success
  log="$(make_log "SMOKE init start release=6.1.0-56-amd64" \
    "[    3.0] WARNING: CPU: 1 PID: 94 at kernel-open/nvidia/nv.c:1 nv_init+0x1/0x2 [nvidia]" \
    "[    3.1] NVRM: No NVIDIA GPU found." "SMOKE insmod nvidia rc=19" "SMOKE done")"
  run smoke_verdict "$log"
  assert_failure 1
  assert_output --partial "FAIL kernel warning while loading modules"
}

@test "errno_name names the common insmod results" {
  run errno_name 19
  assert_output "ENODEV"
  run errno_name 8
  assert_output "ENOEXEC, invalid module format"
  run errno_name 137
  assert_output "insmod killed by signal 9"
  run errno_name 42
  assert_output "errno 42"
}

@test "printable_log drops carriage returns and terminal escapes" {
  printf '\033c\033[?7lSeaBIOS\r\nSMOKE done\r\n' >"$BATS_TEST_TMPDIR/raw.log"
  run printable_log "$BATS_TEST_TMPDIR/raw.log"
  assert_output "$(printf 'SeaBIOS\nSMOKE done')"
}

# --- helpers that build the initramfs ---------------------------------------

@test "write_init: valid sh that prints the markers smoke_verdict parses" {
  write_init "$BATS_TEST_TMPDIR/init"
  [[ -x "$BATS_TEST_TMPDIR/init" ]]
  sh -n "$BATS_TEST_TMPDIR/init"
  run grep -c -e '^echo "SMOKE init start release=' -e '^echo "SMOKE insmod nvidia rc=' \
    -e '^ *echo "SMOKE insmod dep [^ ]* rc=' -e '^echo "SMOKE done"$' -e '^poweroff -f$' \
    "$BATS_TEST_TMPDIR/init"
  assert_output 5
}

@test "nvidia_module_names: nvidia first, then the other modules present" {
  parse_args --kernel-release 6.1.0-56-amd64 --modules "$MODULES"
  : >"$MODULES/nvidia-drm.ko"
  : >"$MODULES/nvidia-modeset.ko"
  run nvidia_module_names
  assert_output "$(printf 'nvidia\nnvidia-modeset\nnvidia-drm')"
}

@test "module_name_of strips the directory and any .ko suffix" {
  run module_name_of /lib/modules/6.12.117+deb12-amd64/kernel/drivers/gpu/drm/drm_kms_helper.ko.xz
  assert_output drm_kms_helper
  run module_name_of /x/updates/nvidia-drm.ko
  assert_output nvidia-drm
}

# --- option parsing and usage errors (exit 2) -------------------------------

@test "usage: --help prints usage on stdout and exits 0" {
  run --separate-stderr "$SCRIPT" --help
  assert_success
  assert_output --partial "Usage: ci/heavy/qemu-smoke.sh --kernel-release RELEASE --modules DIR"
  assert_output --partial "--expect-fail"
}

@test "usage: no arguments exits 2" {
  run --separate-stderr "$SCRIPT"
  assert_failure 2
  assert_output ""
  stderr_is "qemu-smoke: --kernel-release is required (see --help)"
}

@test "usage: missing --modules exits 2" {
  run --separate-stderr "$SCRIPT" --kernel-release 6.1.0-56-amd64
  assert_failure 2
  stderr_has "--modules is required"
}

@test "usage: unknown option exits 2" {
  run --separate-stderr "$SCRIPT" --kernel-release 6.1.0-56-amd64 --modules "$MODULES" --kvm
  assert_failure 2
  stderr_has "unknown argument: --kvm"
}

@test "usage: option without its value exits 2" {
  run --separate-stderr "$SCRIPT" --modules "$MODULES" --kernel-release
  assert_failure 2
  stderr_has "option --kernel-release needs a value"
}

@test "usage: bad --timeout exits 2, in both option forms" {
  run --separate-stderr "$SCRIPT" --kernel-release 6.1.0-56-amd64 --modules "$MODULES" --timeout 0
  assert_failure 2
  stderr_has "--timeout must be a positive number of seconds, not '0'"
  run --separate-stderr "$SCRIPT" --kernel-release=6.1.0-56-amd64 --modules="$MODULES" --timeout=soon
  assert_failure 2
  stderr_has "not 'soon'"
}

@test "usage: a release that is not a name exits 2" {
  run --separate-stderr "$SCRIPT" --kernel-release "../6.1" --modules "$MODULES"
  assert_failure 2
  stderr_has "is not a kernel release name"
}

@test "usage: --modules without nvidia.ko exits 2" {
  rm "$MODULES/nvidia.ko"
  run --separate-stderr "$SCRIPT" --kernel-release 6.1.0-56-amd64 --modules "$MODULES"
  assert_failure 2
  stderr_has "no nvidia.ko in --modules"
}

@test "usage: missing --image-deb file exits 2" {
  run --separate-stderr "$SCRIPT" --kernel-release 6.1.0-56-amd64 --modules "$MODULES" \
    --image-deb "$BATS_TEST_TMPDIR/none.deb"
  assert_failure 2
  stderr_has "--image-deb $BATS_TEST_TMPDIR/none.deb does not exist"
}

@test "parse_args: both option forms set the options" {
  parse_args --kernel-release 6.1.0-56-amd64 --modules="$MODULES" --timeout=60 --keep --expect-fail
  [[ "$OPT_RELEASE" == 6.1.0-56-amd64 ]]
  [[ "$OPT_MODULES" == "$MODULES" ]]
  [[ "$OPT_TIMEOUT" == 60 ]]
  [[ "$OPT_KEEP" == 1 ]]
  [[ "$OPT_EXPECT_FAIL" == 1 ]]
}

# --- prerequisites (exit 77) and the vermagic pre-check ----------------------

@test "prerequisites: no qemu on PATH exits 77 with the reason on stderr" {
  local tools=() tool stubs
  for tool in "${ALL_TOOLS[@]}"; do
    [[ "$tool" == qemu-system-x86_64 ]] || tools+=("$tool")
  done
  stubs="$(make_stubs "${tools[@]}")"
  run --separate-stderr /usr/bin/env PATH="$stubs" /bin/bash "$SCRIPT" \
    --kernel-release 6.1.0-56-amd64 --modules "$MODULES"
  assert_failure 77
  assert_output ""
  stderr_has "qemu-smoke: missing prerequisite: qemu-system-x86_64 ("
}

@test "prerequisites: apt-get is needed only without --image-deb and --busybox-deb" {
  local stubs
  stubs="$(make_stubs qemu-system-x86_64 cpio dpkg-deb depmod modprobe timeout)"
  run --separate-stderr /usr/bin/env PATH="$stubs" /bin/bash "$SCRIPT" \
    --kernel-release 6.1.0-56-amd64 --modules "$MODULES"
  assert_failure 77
  stderr_has "missing prerequisite: apt-get apt-cache"
  # With both .deb files given, the same PATH gets past the check and
  # fails later at the vermagic check (STUB_VERMAGIC is empty).
  : >"$BATS_TEST_TMPDIR/image.deb"
  : >"$BATS_TEST_TMPDIR/busybox.deb"
  run --separate-stderr /usr/bin/env PATH="$stubs" /bin/bash "$SCRIPT" \
    --kernel-release 6.1.0-56-amd64 --modules "$MODULES" \
    --image-deb "$BATS_TEST_TMPDIR/image.deb" --busybox-deb "$BATS_TEST_TMPDIR/busybox.deb"
  assert_failure 1
  assert_output --partial "qemu-smoke: FAIL nvidia.ko was built for another kernel"
}

@test "prerequisites: a package apt does not know exits 77 and cleans its temp dir" {
  local stubs
  stubs="$(make_stubs "${ALL_TOOLS[@]}")"
  mkdir -p "$BATS_TEST_TMPDIR/tmp"
  run --separate-stderr env STUB_VERMAGIC="6.1.0-56-amd64 SMP preempt mod_unload modversions " \
    TMPDIR="$BATS_TEST_TMPDIR/tmp" PATH="$stubs:$PATH" \
    "$SCRIPT" --kernel-release 6.1.0-56-amd64 --modules "$MODULES"
  assert_failure 77
  assert_output ""
  stderr_has "apt knows no package linux-image-6.1.0-56-amd64"
  run find "$BATS_TEST_TMPDIR/tmp" -mindepth 1
  assert_output ""
}

@test "prerequisites: apt-get download failing (offline) exits 77" {
  local stubs
  stubs="$(make_stubs "${ALL_TOOLS[@]}")"
  printf '#!/bin/sh\nprintf "Version: 1.0\\nArchitecture: amd64\\n"\n' >"$stubs/apt-cache"
  run --separate-stderr env STUB_VERMAGIC="6.1.0-56-amd64 SMP preempt mod_unload modversions " \
    PATH="$stubs:$PATH" "$SCRIPT" \
    --kernel-release 6.1.0-56-amd64 --modules "$MODULES" --work-dir "$BATS_TEST_TMPDIR/work"
  assert_failure 77
  stderr_has "apt-get download linux-image-6.1.0-56-amd64 failed (offline?)"
}

@test "vermagic: a module for another release fails before booting" {
  local stubs
  stubs="$(make_stubs "${ALL_TOOLS[@]}")"
  run --separate-stderr env STUB_VERMAGIC="6.1.0-50-amd64 SMP preempt mod_unload modversions " \
    PATH="$stubs:$PATH" "$SCRIPT" \
    --kernel-release 6.1.0-56-amd64 --modules "$MODULES"
  assert_failure 1
  assert_output "qemu-smoke: FAIL nvidia.ko was built for another kernel: vermagic '6.1.0-50-amd64 SMP preempt mod_unload modversions' does not start with 6.1.0-56-amd64"
}

@test "vermagic: a release that is only a prefix of the module's does not match" {
  local stubs
  stubs="$(make_stubs "${ALL_TOOLS[@]}")"
  run --separate-stderr env STUB_VERMAGIC="6.1.0-56-amd64-rt SMP preempt_rt mod_unload modversions " \
    PATH="$stubs:$PATH" "$SCRIPT" \
    --kernel-release 6.1.0-56-amd64 --modules "$MODULES"
  assert_failure 1
  assert_output --partial "FAIL nvidia.ko was built for another kernel"
}

@test "vermagic: --expect-fail skips the pre-check" {
  local stubs
  stubs="$(make_stubs "${ALL_TOOLS[@]}")"
  run --separate-stderr env STUB_VERMAGIC="6.1.0-50-amd64 SMP preempt mod_unload modversions " \
    PATH="$stubs:$PATH" "$SCRIPT" \
    --kernel-release 6.1.0-56-amd64 --modules "$MODULES" --expect-fail \
    --work-dir "$BATS_TEST_TMPDIR/work"
  # It gets as far as apt-cache, which the stub makes fail.
  assert_failure 77
  stderr_has "apt knows no package"
}
