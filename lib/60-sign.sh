# shellcheck shell=bash
# lib/60-sign.sh: module signing for Secure Boot.
#
# Which key (the first that applies):
#   --sign-key FILE --sign-cert FILE   the user's key pair (PEM key; PEM or DER cert)
#   DKMS's key /var/lib/dkms/mok.key + /var/lib/dkms/mok.pub, when present
#   --sign-generate                    a new pair made there, the way DKMS makes it
# Under DKMS the key DKMS uses is the key: its own (it makes one if there is
# none) or, with --sign-key/--sign-cert, the one named in
# /etc/dkms/framework.conf.d/nvidia-p2p.conf, so modules DKMS rebuilds for
# new kernels are signed too. Without DKMS (--no-dkms) each module is signed
# with the kernel's own scripts/sign-file after it is stripped.
# Every signature is checked against the certificate afterwards. The key must
# be enrolled (mokutil) for the firmware to trust it; build.sh says how, and
# never claims it is done.

readonly DKMS_MOK_KEY="/var/lib/dkms/mok.key"
readonly DKMS_MOK_CERT="/var/lib/dkms/mok.pub"
# The kernel's MODULE_SIG_STRING, without its final newline (checked apart).
readonly MODULE_SIG_MAGIC="~Module signature appended~"

P2P_SIGN_KEY=""
P2P_SIGN_CERT=""
P2P_SIGN_GENERATE=0
# set by sign_resolve: user (options), dkms (DKMS's pair), generate, or none
P2P_SIGN_SOURCE=""

# sign_resolve: choose the key pair (P2P_SIGN_KEY/CERT) before anything
# changes, and check it. P2P_SIGN_SOURCE: user, dkms (DKMS's existing pair),
# generate (--sign-generate), dkms-new (DKMS makes its pair at its first
# build; checked after it), none (--no-dkms without a key: unsigned).
sign_resolve() {
  local key="${P2P_ROOT}${DKMS_MOK_KEY}" cert="${P2P_ROOT}${DKMS_MOK_CERT}"
  if [[ -n ${P2P_SIGN_KEY} || -n ${P2P_SIGN_CERT} ]]; then
    [[ -n ${P2P_SIGN_KEY} && -n ${P2P_SIGN_CERT} ]] ||
      die "${EX_USAGE}" "--sign-key and --sign-cert go together (the private key and its certificate)"
    [[ ${P2P_SIGN_GENERATE} -eq 0 ]] || die "${EX_USAGE}" "--sign-generate makes a new key; it excludes --sign-key/--sign-cert"
    P2P_SIGN_SOURCE=user
  elif [[ -e ${key} || -e ${cert} ]]; then
    P2P_SIGN_KEY=${key}
    P2P_SIGN_CERT=${cert}
    P2P_SIGN_SOURCE=dkms
    [[ ${P2P_SIGN_GENERATE} -eq 0 ]] || note "--sign-generate: DKMS's key pair ${key} exists already; using it"
  elif [[ ${P2P_SIGN_GENERATE} -eq 1 ]]; then
    P2P_SIGN_KEY=${key}
    P2P_SIGN_CERT=${cert}
    P2P_SIGN_SOURCE=generate
    return 0
  elif [[ ${P2P_NO_DKMS} -eq 0 ]]; then
    P2P_SIGN_SOURCE=dkms-new
    return 0
  else
    P2P_SIGN_SOURCE=none
    return 0
  fi
  # A normal user (the pipeline before sudo) may not read root's key: the
  # install step, as root, checks it.
  if ! is_root && [[ ! -r ${P2P_SIGN_KEY} ]]; then
    verbose "signing key ${P2P_SIGN_KEY} is checked by the install step (root)"
    return 0
  fi
  [[ ${P2P_DRY_RUN} -eq 1 && ! -e ${P2P_SIGN_KEY} ]] && return 0
  sign_check_pair "${P2P_SIGN_KEY}" "${P2P_SIGN_CERT}"
}

# sign_after_dkms: DKMS made its key pair during the build (dkms-new): from
# now on it is the pair the modules are checked against.
sign_after_dkms() {
  local key="${P2P_ROOT}${DKMS_MOK_KEY}" cert="${P2P_ROOT}${DKMS_MOK_CERT}"
  [[ ${P2P_SIGN_SOURCE} == dkms-new && ${P2P_DRY_RUN} -eq 0 ]] || return 0
  if [[ -e ${cert} ]]; then
    P2P_SIGN_KEY=${key}
    P2P_SIGN_CERT=${cert}
    P2P_SIGN_SOURCE=dkms
    return 0
  fi
  if secure_boot_enabled; then
    die "${EX_SIGN}" "Secure Boot is enabled but DKMS signed nothing (no ${DKMS_MOK_CERT} after its build; is openssl installed?): rerun with --sign-generate or --sign-key/--sign-cert"
  fi
  verbose "DKMS made no signing key (kernel without module signing?); modules are unsigned"
}

# sign_check_pair KEY CERT: readable, the certificate belongs to the key, and
# it has not expired. EX_SIGN otherwise, naming the fix.
sign_check_pair() {
  local key=$1 cert=$2 kpub cpub end
  need_cmd openssl openssl
  [[ -r ${key} ]] || die "${EX_SIGN}" "cannot read the signing key ${key}: check the path and its permissions (it is readable by root only: run as root)"
  kpub=$(openssl pkey -in "${key}" -pubout 2>/dev/null) ||
    die "${EX_SIGN}" "${key} is not a private key openssl can read (PEM, unencrypted): pass the key made with the certificate"
  [[ -r ${cert} ]] || die "${EX_SIGN}" "cannot read the certificate ${cert}: check the path"
  cpub=$(cert_openssl "${cert}" -pubkey -noout 2>/dev/null) ||
    die "${EX_SIGN}" "${cert} is not an X.509 certificate (PEM or DER)"
  [[ ${kpub} == "${cpub}" ]] ||
    die "${EX_SIGN}" "the certificate ${cert} does not belong to the key ${key} (their public keys differ): pass the certificate made with this key"
  if ! cert_openssl "${cert}" -checkend 0 -noout >/dev/null 2>&1; then
    end=$(cert_openssl "${cert}" -enddate -noout 2>/dev/null | sed 's/^notAfter=//')
    die "${EX_SIGN}" "the certificate ${cert} expired (${end}): make a new key pair (--sign-generate after moving the old one away, or your own) and enroll it with mokutil"
  fi
  verbose "signing key ${key}, certificate ${cert}: $(cert_openssl "${cert}" -subject -noout 2>/dev/null)"
}

# cert_openssl CERT ARGS...: openssl x509 on CERT, DER or PEM.
cert_openssl() {
  local cert=$1
  shift
  if openssl x509 -inform DER -in "${cert}" -noout 2>/dev/null; then
    openssl x509 -inform DER -in "${cert}" "$@"
  else
    openssl x509 -in "${cert}" "$@"
  fi
}

# sign_prepare: inside the install transaction: generate the pair when asked,
# and point DKMS at a user's pair.
sign_prepare() {
  [[ ${P2P_SIGN_SOURCE} == generate ]] && sign_generate "${P2P_SIGN_KEY}" "${P2P_SIGN_CERT}"
  [[ ${P2P_NO_DKMS} -eq 0 && ${P2P_SIGN_SOURCE} == user ]] && sign_dkms_conf
  return 0
}

# sign_generate KEY CERT: a new RSA key and self-signed certificate (DER, as
# mokutil --import wants), like DKMS's own, valid 100 years.
sign_generate() {
  local key=$1 cert=$2
  need_cmd openssl openssl
  txn_save "${key}"
  txn_save "${cert}"
  stage sign "new module signing key ${key}, certificate ${cert}"
  if [[ ${P2P_DRY_RUN} -eq 1 ]]; then
    printf 'would run: openssl req -new -x509 -nodes -days 36500 -newkey rsa:2048 -keyout %s -outform DER -out %s\n' "${key}" "${cert}"
    return 0
  fi
  txn_mkdir "$(dirname "${key}")"
  (umask 077 && openssl req -new -x509 -nodes -days 36500 -newkey rsa:2048 \
    -subj "/CN=nvidia-p2p module signing key ($(hostname 2>/dev/null || echo host))/" \
    -addext "extendedKeyUsage=codeSigning" -keyout "${key}" -outform DER -out "${cert}") >/dev/null 2>&1 ||
    die "${EX_SIGN}" "openssl could not make a key pair at ${key}"
  sign_check_pair "${key}" "${cert}"
}

# sign_dkms_conf: DKMS signs with the user's pair (every module DKMS builds,
# ours and others': DKMS has one signing key per machine).
sign_dkms_conf() {
  local conf="${P2P_ROOT}/etc/dkms/framework.conf.d/${P2P_NAME}.conf"
  txn_save "${conf}"
  if [[ ${P2P_DRY_RUN} -eq 1 ]]; then
    printf 'would write %s: mok_signing_key=%s mok_certificate=%s\n' "${conf}" "${P2P_SIGN_KEY}" "${P2P_SIGN_CERT}"
    return 0
  fi
  txn_mkdir "$(dirname "${conf}")"
  {
    printf '# Installed by %s build.sh: DKMS signs modules with this key pair.\n' "${P2P_NAME}"
    printf 'mok_signing_key="%s"\n' "${P2P_SIGN_KEY#"${P2P_ROOT}"}"
    printf 'mok_certificate="%s"\n' "${P2P_SIGN_CERT#"${P2P_ROOT}"}"
  } >"${conf}"
}

# sign_file_for KVER: the kernel's own scripts/sign-file (its headers', else
# Debian's linux-kbuild-<x.y>, else the build tree of --kernel-src).
sign_file_for() {
  local kver=$1 f
  for f in "${P2P_ROOT}/lib/modules/${kver}/build/scripts/sign-file" \
    "${P2P_ROOT}/usr/lib/linux-kbuild-$(sed -E 's/^([0-9]+\.[0-9]+).*/\1/' <<<"${kver}")/scripts/sign-file" \
    "${P2P_SYSOUT:-/nonexistent}/scripts/sign-file"; do
    [[ -x ${f} ]] && { printf '%s\n' "${f}" && return 0; }
  done
  die "${EX_SIGN}" "no scripts/sign-file for kernel ${kver} (in its headers or linux-kbuild): install its headers ($(headers_package_hint "${kver}"))"
}

# sign_hash_for KVER: the kernel's module signature hash (sha256 if unknown).
sign_hash_for() {
  local h="" config="${P2P_ROOT}/lib/modules/$1/build/.config"
  [[ -r ${config} ]] && h=$(sed -n -E 's/^CONFIG_MODULE_SIG_HASH="([a-z0-9-]+)"$/\1/p' "${config}" | head -n 1)
  printf '%s\n' "${h:-sha256}"
}

# sign_modules KVER DIR: sign every module in DIR for KVER, then check it.
sign_modules() {
  local kver=$1 dir=$2 sf hash m
  [[ -n ${P2P_SIGN_CERT} ]] || return 0
  sf=$(sign_file_for "${kver}")
  hash=$(sign_hash_for "${kver}")
  stage sign "modules for ${kver} with ${P2P_SIGN_CERT} (${hash}, ${sf})"
  for m in ${P2P_MODULES}; do
    run "${sf}" "${hash}" "${P2P_SIGN_KEY}" "${P2P_SIGN_CERT}" "${dir}/${m}.ko" ||
      die "${EX_SIGN}" "sign-file failed on ${dir}/${m}.ko"
    [[ ${P2P_DRY_RUN} -eq 1 ]] || sign_check_module "${dir}/${m}.ko"
  done
}

# sign_check_module KO: KO carries a signature that verifies against the
# certificate (EX_SIGN otherwise).
sign_check_module() {
  module_sig_verify "$1" "${P2P_SIGN_CERT}" ||
    die "${EX_SIGN}" "$1 has no signature that verifies against ${P2P_SIGN_CERT}"
}

# module_sig_verify KO CERT: the PKCS#7 signature appended to KO (sign-file's
# format: module, signature, struct module_signature of 12 bytes ending in the
# signature's length as a big-endian u32, "~Module signature appended~\n")
# verifies the module's contents against CERT.
module_sig_verify() {
  local ko=$1 cert=$2 tmp rc=0
  [[ -f ${ko} ]] || return 1
  tmp=$(mktemp -d)
  # DKMS compresses modules where the kernel does (.ko.xz, .ko.zst, .ko.gz):
  # the signature is inside.
  case ${ko} in
  *.xz) xz -dc -- "${ko}" >"${tmp}/ko" || rc=1 ;;
  *.zst) zstd -qdc -- "${ko}" >"${tmp}/ko" || rc=1 ;;
  *.gz) gzip -dc -- "${ko}" >"${tmp}/ko" || rc=1 ;;
  *) cp -- "${ko}" "${tmp}/ko" || rc=1 ;;
  esac
  if [[ ${rc} -eq 0 ]]; then
    module_sig_verify_plain "${tmp}/ko" "${cert}" "${tmp}" || rc=1
  fi
  rm -rf -- "${tmp}"
  return "${rc}"
}

# module_sig_verify_plain KO CERT TMPDIR: module_sig_verify on an
# uncompressed module, with scratch space in TMPDIR.
module_sig_verify_plain() {
  local ko=$1 cert=$2 tmp=$3 size siglen body trailer=$((${#MODULE_SIG_MAGIC} + 1))
  local -a b=()
  size=$(stat -c %s -- "${ko}")
  ((size > trailer + 12)) || return 1
  tail -c "${trailer}" -- "${ko}" | head -c "${#MODULE_SIG_MAGIC}" | grep -a -q -x -F -- "${MODULE_SIG_MAGIC}" || return 1
  [[ "$(tail -c 1 -- "${ko}" | od -An -tu1 | tr -d ' ')" == 10 ]] || return 1
  read -r -a b < <(tail -c $((trailer + 12)) -- "${ko}" | head -c 12 | od -An -tu1 -w12)
  [[ ${#b[@]} -eq 12 && ${b[2]} -eq 2 ]] || return 1
  siglen=$(((b[8] << 24) | (b[9] << 16) | (b[10] << 8) | b[11]))
  body=$((size - trailer - 12 - siglen))
  ((siglen > 0 && body > 0)) || return 1
  head -c "${body}" -- "${ko}" >"${tmp}/body"
  tail -c $((trailer + 12 + siglen)) -- "${ko}" | head -c "${siglen}" >"${tmp}/sig.p7"
  cert_openssl "${cert}" -outform PEM -out "${tmp}/cert.pem" 2>/dev/null || return 1
  openssl cms -verify -binary -inform DER -in "${tmp}/sig.p7" -content "${tmp}/body" \
    -certfile "${tmp}/cert.pem" -nointern -noverify -out /dev/null >/dev/null 2>&1
}

# sign_enrolled CERT: yes, no, or unknown (no mokutil, or no EFI).
sign_enrolled() {
  local out
  command -v mokutil >/dev/null 2>&1 || { echo unknown && return 0; }
  out=$(mokutil --test-key "$1" 2>&1) || true
  case ${out} in
  *"already enrolled"*) echo yes ;;
  *"not enrolled"*) echo no ;;
  *) echo unknown ;;
  esac
}

# sign_next_steps: after an install with a key: what is left to do for
# Secure Boot, exactly, unless the key is enrolled already.
sign_next_steps() {
  local state der
  [[ -n ${P2P_SIGN_CERT} && ${P2P_DRY_RUN} -eq 0 ]] || return 0
  state=$(sign_enrolled "${P2P_SIGN_CERT}")
  # Without Secure Boot nothing checks the key: enrollment is asked for only
  # under Secure Boot, or for a key the user asked for.
  secure_boot_enabled || [[ ${P2P_SIGN_SOURCE} == user || ${P2P_SIGN_SOURCE} == generate ]] || return 0
  [[ ${state} != yes ]] || { note "the signing certificate ${P2P_SIGN_CERT} is enrolled (mokutil --test-key)" && return 0; }
  der=${P2P_SIGN_CERT}
  cat >&2 <<EOF
${P2P_PROG}: the modules are signed with ${P2P_SIGN_CERT}, which is NOT enrolled$([[ ${state} == no ]] || printf ' (or this could not be checked: %s)' "no mokutil or no EFI"):
  under Secure Boot they will not load ("Key was rejected by service") until it is. To enroll it:
EOF
  if ! openssl x509 -inform DER -in "${der}" -noout >/dev/null 2>&1; then
    der="${P2P_SIGN_CERT%.*}.der"
    printf '    sudo openssl x509 -in %s -outform DER -out %s\n' "${P2P_SIGN_CERT}" "${der}" >&2
  fi
  cat >&2 <<EOF
    sudo mokutil --import ${der#"${P2P_ROOT}"}     (choose a one-time password)
    sudo reboot
    in the blue MOK Manager screen: Enroll MOK, Continue, Yes, the password, Reboot
  Then check: mokutil --test-key ${der#"${P2P_ROOT}"}   (says "is already enrolled")
EOF
}

# sign_available: a key will sign the modules (sign_resolve has run).
sign_available() {
  [[ -n ${P2P_SIGN_CERT} || ${P2P_SIGN_SOURCE} == dkms-new ]]
}

# preflight_secure_boot: under Secure Boot the modules must be signed: refused
# only when no key will sign them (sign_resolve has run).
preflight_secure_boot() {
  secure_boot_enabled || return 0
  sign_available && return 0
  preflight_fail "${EX_PREFLIGHT}" "Secure Boot is enabled and no key would sign the modules (they would not load): use DKMS (drop --no-dkms), or --sign-key FILE --sign-cert FILE, or --sign-generate; see docs/install.md (Secure Boot: signing)"
}
