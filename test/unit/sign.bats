#!/usr/bin/env bats
# Module signing for Secure Boot: the user's key pair, DKMS's, a generated
# one; under DKMS (the stand-in signs as dkms 3.x does) and with --no-dkms
# (the kernel's scripts/sign-file: a stand-in whose output is byte-identical
# to the real one, checked below when a real sign-file is available). Every
# signature is verified against the certificate; bad keys stop the install
# before anything changes.

load ../test_helper

setup() {
  prepared_setup sign_env sign_state
}

sign_env() {
  export STANDIN_ROOT="${ROOT}"
  RUNFILE="${FIX}/NVIDIA-Linux-x86_64-${FIXTURE_TAG}.run"
  KEYS="${TEST_BASE}/keys"
}

# Fetched and built, as root, the dkms stand-in, the kernel's sign-file, a
# user key pair.
sign_state() {
  fetch_and_build
  as_root
  stub_dkms
  kernel_sign_file "${ROOT}" "${FIXTURE_KREL}"
  make_key_pair "${KEYS}" user
  mkdir -p "${ROOT}/etc/modprobe.d" "${ROOT}/etc/depmod.d" "${ROOT}/var/lib/dkms"
}

install_p2p() {
  run_build --root "${ROOT}" --yes install "${FIXTURE_TAG}" --run "${RUNFILE}" "$@"
}

# verifies KO CERT: build.sh's own signature check, run on its own.
verifies() {
  bash -c 'source "$1/lib/60-sign.sh" && module_sig_verify "$2" "$3"' _ "${REPO_ROOT}" "$1" "$2"
}

assert_all_verify() {
  local dir=$1 cert=$2 m
  for m in nvidia nvidia-uvm nvidia-modeset nvidia-drm nvidia-peermem; do
    verifies "${dir}/${m}.ko" "${cert}" || fail "${dir}/${m}.ko does not verify against ${cert}"
  done
}

assert_nothing_installed() {
  assert_not_exist "${ROOT}/lib/modules/${FIXTURE_KREL}/updates/nvidia-p2p"
  assert_not_exist "${ROOT}/lib/modules/${FIXTURE_KREL}/updates/dkms/nvidia.ko"
  assert_not_exist "${ROOT}/usr/src/nvidia-p2p-${FIXTURE_TAG}"
  assert_not_exist "${ROOT}/etc/modprobe.d/nvidia-p2p.conf"
  assert_not_exist "${ROOT}/etc/dkms/framework.conf.d/nvidia-p2p.conf"
}

@test "the signature check itself: a signed module verifies, the same module under another certificate or changed does not" {
  printf 'module body\n' >"${BATS_TEST_TMPDIR}/m.ko"
  "${REPO_ROOT}/test/fixtures/sign-file" sha256 "${KEYS}/user.key" "${KEYS}/user.der" "${BATS_TEST_TMPDIR}/m.ko"
  verifies "${BATS_TEST_TMPDIR}/m.ko" "${KEYS}/user.der"
  make_key_pair "${KEYS}" other
  run verifies "${BATS_TEST_TMPDIR}/m.ko" "${KEYS}/other.der"
  assert_failure
  printf 'X' | dd of="${BATS_TEST_TMPDIR}/m.ko" bs=1 seek=3 conv=notrunc 2>/dev/null
  run verifies "${BATS_TEST_TMPDIR}/m.ko" "${KEYS}/user.der"
  assert_failure
  printf 'unsigned\n' >"${BATS_TEST_TMPDIR}/u.ko"
  run verifies "${BATS_TEST_TMPDIR}/u.ko" "${KEYS}/user.der"
  assert_failure
}

@test "the sign-file stand-in writes exactly what the kernel's scripts/sign-file writes" {
  local real=${NVP2P_TEST_SIGN_FILE:-}
  [[ -n ${real} ]] || real=$(find /usr/lib/linux-kbuild-*/scripts /lib/modules/*/build/scripts -maxdepth 1 -name sign-file -type f 2>/dev/null | head -n 1)
  [[ -x ${real} ]] || skip "no real sign-file (set NVP2P_TEST_SIGN_FILE, or install linux-kbuild-*)"
  printf 'module body\n' >"${BATS_TEST_TMPDIR}/a.ko"
  cp "${BATS_TEST_TMPDIR}/a.ko" "${BATS_TEST_TMPDIR}/b.ko"
  "${real}" sha256 "${KEYS}/user.key" "${KEYS}/user.der" "${BATS_TEST_TMPDIR}/a.ko"
  "${REPO_ROOT}/test/fixtures/sign-file" sha256 "${KEYS}/user.key" "${KEYS}/user.der" "${BATS_TEST_TMPDIR}/b.ko"
  cmp "${BATS_TEST_TMPDIR}/a.ko" "${BATS_TEST_TMPDIR}/b.ko"
  verifies "${BATS_TEST_TMPDIR}/a.ko" "${KEYS}/user.der"
}

@test "--no-dkms --sign-key/--sign-cert: the kernel's sign-file signs every module, each verifies" {
  install_p2p --no-dkms --sign-key "${KEYS}/user.key" --sign-cert "${KEYS}/user.der"
  assert_success
  run grep -c "^sign-file sha256 ${KEYS}/user.key ${KEYS}/user.der " "${STUB_LOG}"
  assert_output 5
  assert_all_verify "${ROOT}/lib/modules/${FIXTURE_KREL}/updates/nvidia-p2p" "${KEYS}/user.der"
}

@test "--no-dkms --sign-generate: a DER certificate and a private key only root reads, used to sign" {
  install_p2p --no-dkms --sign-generate
  assert_success
  assert_file_exist "${ROOT}/var/lib/dkms/mok.key"
  assert_file_exist "${ROOT}/var/lib/dkms/mok.pub"
  assert_equal "$(stat -c %a "${ROOT}/var/lib/dkms/mok.key")" 600
  openssl x509 -inform DER -in "${ROOT}/var/lib/dkms/mok.pub" -noout
  assert_all_verify "${ROOT}/lib/modules/${FIXTURE_KREL}/updates/nvidia-p2p" "${ROOT}/var/lib/dkms/mok.pub"
  assert_output --partial "sudo mokutil --import /var/lib/dkms/mok.pub"
  assert_output --partial "sudo reboot"
  assert_output --partial "Enroll MOK"
}

@test "--no-dkms: DKMS's existing key pair is used without being asked for" {
  make_key_pair "${ROOT}/var/lib/dkms" mok
  mv "${ROOT}/var/lib/dkms/mok.der" "${ROOT}/var/lib/dkms/mok.pub"
  install_p2p --no-dkms
  assert_success
  assert_all_verify "${ROOT}/lib/modules/${FIXTURE_KREL}/updates/nvidia-p2p" "${ROOT}/var/lib/dkms/mok.pub"
}

@test "DKMS without a key pair: DKMS makes one while building, build.sh checks every module against it" {
  install_p2p
  assert_success
  assert_file_exist "${ROOT}/var/lib/dkms/mok.pub"
  assert_output --partial "installed versions and signatures"
  assert_all_verify "${ROOT}/lib/modules/${FIXTURE_KREL}/updates/dkms" "${ROOT}/var/lib/dkms/mok.pub"
  run cat "${ROOT}/var/lib/nvidia-p2p/dkms-${FIXTURE_TAG}"
  assert_output --partial "cert=${ROOT}/var/lib/dkms/mok.pub"
}

@test "DKMS with --sign-key/--sign-cert: DKMS's framework configuration names the pair; uninstall removes it" {
  install_p2p --sign-key "${KEYS}/user.key" --sign-cert "${KEYS}/user.der"
  assert_success
  run cat "${ROOT}/etc/dkms/framework.conf.d/nvidia-p2p.conf"
  assert_line "mok_signing_key=\"${KEYS}/user.key\""
  assert_line "mok_certificate=\"${KEYS}/user.der\""
  assert_all_verify "${ROOT}/lib/modules/${FIXTURE_KREL}/updates/dkms" "${KEYS}/user.der"
  assert_not_exist "${ROOT}/var/lib/dkms/mok.key"
  run_build --root "${ROOT}" --yes uninstall
  assert_success
  assert_not_exist "${ROOT}/etc/dkms/framework.conf.d/nvidia-p2p.conf"
}

@test "a module whose signature does not verify against the certificate fails the install (15) and rolls back" {
  make_key_pair "${KEYS}" other
  # a sign-file that signs with another key than it is given
  cat >"${ROOT}/usr/src/linux-headers-${FIXTURE_KREL}/scripts/sign-file" <<STUB
#!/usr/bin/env bash
exec "${REPO_ROOT}/test/fixtures/sign-file" "\$1" "${KEYS}/other.key" "${KEYS}/other.der" "\$4"
STUB
  install_p2p --no-dkms --sign-key "${KEYS}/user.key" --sign-cert "${KEYS}/user.der"
  assert_failure 15
  assert_output --partial "has no signature that verifies against ${KEYS}/user.der"
  assert_output --partial "rolled back"
  assert_nothing_installed
}

@test "Secure Boot on, DKMS: the install goes ahead and says exactly how to enroll the key that is not enrolled" {
  stub mokutil - <<'STUB'
case $1 in
--sb-state) echo "SecureBoot enabled" ;;
--test-key) echo "$2 is not enrolled" ;;
esac
STUB
  install_p2p
  assert_success
  assert_output --partial "which is NOT enrolled"
  assert_output --partial "sudo mokutil --import /var/lib/dkms/mok.pub"
  assert_output --partial "mokutil --test-key /var/lib/dkms/mok.pub"
}

@test "Secure Boot on with an enrolled key: no enrollment steps" {
  stub mokutil - <<'STUB'
case $1 in
--sb-state) echo "SecureBoot enabled" ;;
--test-key) echo "$2 is already enrolled" ;;
esac
STUB
  install_p2p --sign-key "${KEYS}/user.key" --sign-cert "${KEYS}/user.der"
  assert_success
  assert_output --partial "is enrolled (mokutil --test-key)"
  refute_output --partial "mokutil --import"
}

@test "a PEM certificate gets the DER conversion command before mokutil --import" {
  openssl x509 -inform DER -in "${KEYS}/user.der" -out "${KEYS}/user.pem"
  install_p2p --no-dkms --sign-key "${KEYS}/user.key" --sign-cert "${KEYS}/user.pem"
  assert_success
  assert_all_verify "${ROOT}/lib/modules/${FIXTURE_KREL}/updates/nvidia-p2p" "${KEYS}/user.pem"
  assert_output --partial "sudo openssl x509 -in ${KEYS}/user.pem -outform DER -out ${KEYS}/user.der"
  assert_output --partial "sudo mokutil --import ${KEYS}/user.der"
}

@test "a key that cannot be read stops the install (15) before anything changes" {
  install_p2p --sign-key "${KEYS}/missing.key" --sign-cert "${KEYS}/user.der"
  assert_failure 15
  assert_output --partial "cannot read the signing key ${KEYS}/missing.key"
  assert_nothing_installed
  printf 'not a key\n' >"${KEYS}/garbage.key"
  install_p2p --sign-key "${KEYS}/garbage.key" --sign-cert "${KEYS}/user.der"
  assert_failure 15
  assert_output --partial "is not a private key openssl can read"
  assert_nothing_installed
}

@test "a certificate of another key stops the install (15)" {
  make_key_pair "${KEYS}" other
  install_p2p --sign-key "${KEYS}/user.key" --sign-cert "${KEYS}/other.der"
  assert_failure 15
  assert_output --partial "does not belong to the key ${KEYS}/user.key"
  assert_nothing_installed
}

@test "an expired certificate stops the install (15), naming the date and the fix" {
  make_expired_pair "${KEYS}" old
  install_p2p --no-dkms --sign-key "${KEYS}/old.key" --sign-cert "${KEYS}/old.pem"
  assert_failure 15
  assert_output --partial "expired (Jan  2 00:00:00 2020 GMT)"
  assert_output --partial "enroll it with mokutil"
  assert_nothing_installed
}

@test "--sign-key without --sign-cert, and --sign-generate with a given key, are usage errors (2)" {
  install_p2p --sign-key "${KEYS}/user.key"
  assert_failure 2
  assert_output --partial "--sign-key and --sign-cert go together"
  install_p2p --sign-key "${KEYS}/user.key" --sign-cert "${KEYS}/user.der" --sign-generate
  assert_failure 2
  assert_output --partial "it excludes --sign-key/--sign-cert"
}

@test "--no-dkms signing without a sign-file in the kernel's headers stops (15) naming the headers package" {
  rm "${ROOT}/usr/src/linux-headers-${FIXTURE_KREL}/scripts/sign-file"
  install_p2p --no-dkms --sign-key "${KEYS}/user.key" --sign-cert "${KEYS}/user.der"
  assert_failure 15
  assert_output --partial "no scripts/sign-file for kernel ${FIXTURE_KREL}"
  assert_nothing_installed
}
