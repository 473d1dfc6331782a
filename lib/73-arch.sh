# shellcheck shell=bash
# lib/73-arch.sh: `build.sh package <tag> --format arch`: a PKGBUILD for Arch
# Linux and CachyOS, and the package makepkg builds from it.
#
# The package nvidia-p2p-dkms takes the place of Arch's nvidia-open-dkms of
# the same version (a split package of Arch's nvidia-utils since 2025): it
# provides NVIDIA-MODULE (and conflicts with it: one kernel module package at
# a time, Arch's own rule) and nvidia-open-dkms=<tag>, conflicts with
# nvidia-open-dkms, and depends on dkms and nvidia-utils=<tag>, as that
# package does. Not replaces=: that would swap it in on every pacman -Syu.
# Its prepare() checks the unpacked source against the pin and applies the
# family's series (lib/72-pkgsrc.sh); build() builds the two
# kernel-independent objects; package() installs the DKMS tree
# /usr/src/nvidia-p2p-<tag>, the options /usr/lib/modprobe.d/nvidia-p2p.conf
# and the depmod override /usr/lib/depmod.d/nvidia-p2p.conf. The dkms package's
# pacman hooks build and remove the modules for every kernel with headers.
# On a clang-built kernel (CachyOS), dkms 3.1.2 and later build them with
# LLVM=1 by themselves (they read CONFIG_CC_IS_CLANG).
#
# Written into <out>/nvidia-p2p-dkms-<tag>-<rev>-arch/ (PKGBUILD, its sources,
# NVIDIA's tarball made from the verified source); makepkg builds
# <out>/nvidia-p2p-dkms-<tag>-<rev>-x86_64.pkg.tar.zst from a copy of it.

# arch_recipe_dir TAG OUT: where the PKGBUILD directory goes.
arch_recipe_dir() { printf '%s/%s-arch\n' "$2" "$(pkg_base "$1")"; }

# arch_pkg_file TAG: the package's file name.
arch_pkg_file() { printf '%s-x86_64.pkg.tar.zst\n' "$(pkg_base "$1")"; }

# arch_preflight: what makepkg needs, before anything is fetched or written.
arch_preflight() {
  need_cmd makepkg makepkg
  need_cmd zstd zstd
  need_cmd git git
  need_cmd objdump binutils
  need_cmd make make
  ! is_root || die "${EX_PREFLIGHT}" "makepkg does not run as root: run build.sh package --format arch as a normal user (nothing in it needs root); nothing was written"
}

# arch_userspace_check TAG: on an Arch system, its nvidia-utils must be TAG
# (the package depends on nvidia-utils=TAG).
arch_userspace_check() {
  local v=""
  if command -v pacman >/dev/null 2>&1; then
    v=$(pacman -Q nvidia-utils 2>/dev/null | awk '{ print $2 }') || v=""
  fi
  pkg_userspace_check "$1" nvidia-utils "${v%-*}" "the Arch Linux Archive has every release: pacman -U https://archive.archlinux.org/packages/n/nvidia-utils/nvidia-utils-$1-1-x86_64.pkg.tar.zst"
}

# arch_package TAG: fetch and verify, check that the series applies, write
# the recipe directory, build the package with makepkg; print both paths.
arch_package() {
  local tag=$1 out recipe pkg scratch
  out=${P2P_OUT:-$(pwd -P)}
  recipe=$(arch_recipe_dir "${tag}" "${out}")
  pkg="${out}/$(arch_pkg_file "${tag}")"
  pkgsrc_prepare "${tag}" PKGBUILD
  if [[ ${P2P_DRY_RUN} -eq 1 ]]; then
    printf 'would write %s and build %s with makepkg\n' "${recipe}" "${pkg}" >&2
    printf '%s\n%s\n' "${pkg}" "${recipe}"
    return 0
  fi
  mkdir -p "${out}"
  mk_temp_dir "${out}"
  scratch=${P2P_TMP}
  mkdir -p "${scratch}/recipe"
  arch_recipe "${tag}" "${scratch}/recipe"
  arch_makepkg "${tag}" "${scratch}"
  mv -f -- "${scratch}/pkg/$(arch_pkg_file "${tag}")" "${pkg}"
  rm -rf -- "${recipe}"
  mv -- "${scratch}/recipe" "${recipe}"
  printf '%s\n%s\n' "${pkg}" "${recipe}"
}

# arch_recipe TAG DIR: the PKGBUILD and its sources in DIR.
arch_recipe() {
  local tag=$1 dir=$2 name
  local -a patches=() files=()
  pkgsrc_tarball "${tag}" "${dir}"
  while IFS= read -r name; do patches+=("${name}"); done < <(pkgsrc_patches "${tag}" "${dir}")
  pkgsrc_files "${tag}" "${dir}" "mkinitcpio -P"
  arch_install_text "${tag}" >"${dir}/${P2P_PKG_NAME}.install"
  files=("${patches[@]}" dkms.conf nvidia-p2p.conf nvidia-p2p-depmod.conf)
  arch_pkgbuild "${tag}" "${dir}" "${#patches[@]}" "${files[@]}" >"${dir}/PKGBUILD"
}

# arch_makepkg TAG WORK: makepkg in a copy of WORK/recipe (its src/ and pkg/
# stay out of the recipe), the package into WORK/pkg. --nodeps: the
# dependencies are the installing machine's business (pacman checks them
# there); what the build itself needs was checked by arch_preflight.
arch_makepkg() {
  local tag=$1 scratch=$2 rc=0
  cp -a -- "${scratch}/recipe" "${scratch}/build"
  mkdir -p "${scratch}/pkg"
  stage makepkg "${P2P_PKG_NAME} ${tag}: check the source, apply the series, build nv-kernel.o and nv-modeset-kernel.o (about 3 minutes on 2 idle cores)"
  (cd "${scratch}/build" && run_logged env PKGDEST="${scratch}/pkg" SRCDEST="${scratch}/build" BUILDDIR="${scratch}/build" \
    PKGEXT=.pkg.tar.zst SRCEXT=.src.tar.gz makepkg --nodeps --noconfirm --nocolor --cleanbuild) || rc=$?
  if [[ ${rc} -ne 0 || ! -f ${scratch}/pkg/$(arch_pkg_file "${tag}") ]]; then
    show_build_errors
    die "${EX_BUILD}" "makepkg could not build ${P2P_PKG_NAME} ${tag} (exit ${rc}); full log: ${P2P_LOG_FILE:-none}; nothing was written"
  fi
}

# arch_pkgbuild TAG DIR NPATCHES FILE...: the PKGBUILD (FILE...: the local
# sources after NVIDIA's tarball, the patches first).
arch_pkgbuild() {
  local tag=$1 dir=$2 npatches=$3 f i=0
  shift 3
  cat <<EOF
# PKGBUILD of ${P2P_PKG_NAME} ${tag}-${P2P_REVISION}, written by nvidia-p2p build.sh
# ${P2P_VERSION} (\`build.sh package ${tag} --format arch\`): NVIDIA's open kernel
# modules ${tag} with the PCIe P2P series of family ${V_FAMILY[${tag}]}, as DKMS source.
# Maintainer: $(pkg_maintainer)

pkgname=${P2P_PKG_NAME}
pkgver=${tag}
pkgrel=${P2P_REVISION}
pkgdesc="NVIDIA open kernel modules with PCIe P2P for GeForce GPUs (DKMS source)"
arch=('x86_64')
url="https://github.com/NVIDIA/open-gpu-kernel-modules"
license=('MIT OR GPL-2.0-only')
depends=('dkms' "nvidia-utils=\${pkgver}")
makedepends=('git' 'binutils')
provides=('NVIDIA-MODULE' "nvidia-open-dkms=\${pkgver}")
conflicts=('NVIDIA-MODULE' 'nvidia-open-dkms')
options=('!strip' '!debug' '!lto')
install=${P2P_PKG_NAME}.install
# The pinned upstream tree: git tree id of the tag, and without .github/ and
# CHANGELOG.md (NVIDIA's tarball); prepare() refuses any other source.
_tree=${V_TREE[${tag}]}
_core=${V_CORE[${tag}]}
_src="NVIDIA-kernel-module-source-\${pkgver}"
source=("$(pkgsrc_url "${tag}")"
EOF
  for f in "$@"; do printf '        %s\n' "${f}"; done | sed '$s/$/)/'
  printf "sha256sums=('SKIP'\n"
  for f in "$@"; do printf "            '%s'\n" "$(sha256_of "${dir}/${f}")"; done | sed '$s/$/)/'
  printf '\n'
  pkgsrc_check_fn
  printf '\n'
  recipe_fn prepare
  cat <<'EOF'
	_nvp2p_check_tree "$srcdir/$_src" "$_tree" "$_core"
	cd "$srcdir/$_src"
EOF
  for f in "$@"; do
    [[ ${i} -lt ${npatches} ]] || break
    printf '\tpatch -Np1 -F0 --no-backup-if-mismatch -i "%s/%s"\n' "\$srcdir" "${f}"
    i=$((i + 1))
  done
  printf '}\n\n'
  recipe_fn build
  cat <<'EOF'
	cd "$srcdir/$_src"
EOF
  pkgsrc_build_text
  printf '}\n\n'
  recipe_fn package
  cat <<'EOF'
	local _files="$srcdir"
	cd "$srcdir/$_src"
EOF
  pkgsrc_install_text "\$pkgdir/usr/src/${DKMS_MODULE}-\$pkgver"
  cat <<'EOF'
	install -Dm644 "$srcdir/nvidia-p2p.conf" "$pkgdir/usr/lib/modprobe.d/nvidia-p2p.conf"
	install -Dm644 "$srcdir/nvidia-p2p-depmod.conf" "$pkgdir/usr/lib/depmod.d/nvidia-p2p.conf"
	install -Dm644 COPYING "$pkgdir/usr/share/licenses/$pkgname/LICENSE"
}
EOF
}

# arch_install_text TAG: the .install script: what pacman prints.
arch_install_text() {
  recipe_fn post_install
  cat <<EOF
	echo "${P2P_PKG_NAME}: dkms builds the modules ${DKMS_MODULE}/\${1%-*} for every kernel with headers (pacman's dkms hook)."
	echo "${P2P_PKG_NAME}: the P2P options are in /usr/lib/modprobe.d/nvidia-p2p.conf; where the nvidia"
	echo "${P2P_PKG_NAME}: modules are in the initramfs, run mkinitcpio -P, then reboot, and check with: build.sh verify"
}

EOF
  recipe_fn post_upgrade
  cat <<'EOF'
	post_install "$1"
}
EOF
}
