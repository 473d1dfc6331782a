# shellcheck shell=bash
# lib/72-pkgsrc.sh: what the Arch and RPM packages (lib/73-arch.sh,
# lib/74-rpm.sh) share, and with the Debian package and the image
# (lib/75-package.sh, lib/78-container.sh) the maintainer and the date.
# Unlike the Debian package, which ships objects built here, the Arch and
# RPM packages are built by the distribution's own tool (makepkg, rpmbuild)
# from a recipe: NVIDIA's release tarball, checked against this project's
# pin before anything is patched, the family's series, applied at fuzz 0, the
# two kernel-independent objects built by upstream's makefiles, then the
# DKMS tree and the module options.
#
# The recipe names NVIDIA's tarball by its download URL, as Arch's
# nvidia-open-dkms does; its sha256 is not pinned anywhere this project
# trusts, so the recipe checks the unpacked tree's git tree id instead (the
# "core" id of versions.conf, which NVIDIA's tarball matches: lib/03-checksums.sh)
# and stops before patching on any difference. build.sh puts a tarball of that
# name, made from the verified source, beside the recipe, so the tools build
# offline; a download from NVIDIA passes the same check.

readonly PKGSRC_URL="https://download.nvidia.com/XFree86/NVIDIA-kernel-module-source"

# pkg_maintainer: the maintainer of every package format (Debian's Maintainer
# field, the PKGBUILD's Maintainer comment, the RPMs' packager and changelog
# entry): $DEBFULLNAME <$DEBEMAIL> (Debian's convention) when set, else a
# placeholder in the reserved .invalid domain: the package is a local build
# that no one maintains in an archive.
pkg_maintainer() {
  if [[ -n ${DEBEMAIL:-} ]]; then
    printf '%s <%s>\n' "${DEBFULLNAME:-${DEBEMAIL%%@*}}" "${DEBEMAIL}"
  else
    printf 'nvidia-p2p local build <nvidia-p2p@local-build.invalid>\n'
  fi
}

# pkg_epoch: the time every package and image records (changelog entries,
# file times): SOURCE_DATE_EPOCH (reproducible-builds.org) when set, else the
# commit time of the git checkout that tracks the series file (once it has a
# commit), else the series file's time (an unpacked release of this project,
# even one unpacked inside another checkout), else 0; never the time of the
# build, so building the same tag and series twice gives the same files.
pkg_epoch() {
  local t=""
  if [[ ${SOURCE_DATE_EPOCH:-} =~ ^[0-9]+$ ]]; then
    t=${SOURCE_DATE_EPOCH}
  elif git -C "${P2P_DATA_DIR}" ls-files --error-unmatch series >/dev/null 2>&1; then
    t=$(git -C "${P2P_DATA_DIR}" log -1 --format=%ct 2>/dev/null) || t=""
  fi
  [[ -n ${t} ]] || t=$(stat -c %Y "${P2P_DATA_DIR}/series" 2>/dev/null) || t=0
  printf '%s\n' "${t}"
}

# pkg_userspace_check TAG PACKAGE VERSION HOW: this machine has the userspace
# PACKAGE at VERSION (empty: not installed); another version than TAG is
# refused (EX_MISMATCH) before anything is fetched or written, as the package
# manager would refuse to install the package beside it (HOW: how to get
# TAG's).
pkg_userspace_check() {
  local tag=$1 pkg=$2 version=$3 how=$4
  [[ -z ${version} || ${version} == "${tag}" ]] && return 0
  die "${EX_MISMATCH}" "this machine has ${pkg} ${version}, and the ${P2P_PKG_NAME} ${tag} package needs the userspace of exactly ${tag}: its package manager would not install it here. Install ${pkg} ${tag} (${how}) or package the tag of your userspace (${version}); nothing was written"
}

# pkg_source_ready TAG: what every package format starts with: the NVLink
# mode and the cache lock, the source fetched and verified, the series
# applied here (a recipe is never written for a series that does not apply).
pkg_source_ready() {
  family_load "$1"
  cache_lock
  fetch_source "$1"
  patch_tree "$1" "$(default_patched_dir "$1")"
}

# pkgsrc_prepare TAG WHAT: pkg_source_ready, then the stage line for WHAT
# (the recipe: PKGBUILD, spec).
pkgsrc_prepare() {
  pkg_source_ready "$1"
  stage recipe "$2 of ${P2P_PKG_NAME} $1-${P2P_REVISION} (family ${V_FAMILY[$1]})"
}

# pkgsrc_dir TAG: the top directory of NVIDIA's tarball of TAG.
pkgsrc_dir() { printf 'NVIDIA-kernel-module-source-%s\n' "$1"; }

# pkgsrc_url TAG: where NVIDIA publishes that tarball.
pkgsrc_url() { printf '%s/%s.tar.xz\n' "${PKGSRC_URL}" "$(pkgsrc_dir "$1")"; }

# pkg_base TAG: name-version-revision, how the Arch and RPM files begin.
pkg_base() { printf '%s-%s-%s\n' "${P2P_PKG_NAME}" "$1" "${P2P_REVISION}"; }

# pkgsrc_tarball TAG DIR: DIR/<pkgsrc_dir>.tar.xz from the verified source of
# TAG (fetch_source first), the same bytes for the same source: names sorted,
# owner root, mtime 0.
pkgsrc_tarball() {
  local tag=$1 dir=$2 src name
  src=$(cache_src_dir "${tag}")
  name=$(pkgsrc_dir "${tag}")
  need_cmd xz xz-utils
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 --format=gnu \
    --transform "s|^\.|${name}|" -C "${src}" -cf - . | xz -T1 -0 >"${dir}/${name}.tar.xz" ||
    die "${EX_BUILD}" "cannot write ${dir}/${name}.tar.xz"
}

# pkgsrc_patches TAG DIR: the patches build.sh would apply to TAG (tag_series:
# compat patches upstream already carries left out), copied into DIR; their
# names on stdout, in order.
pkgsrc_patches() {
  local tag=$1 dir=$2 names name
  names=$(tag_series "${tag}") || exit "$?"
  while IFS= read -r name; do
    [[ -n ${name} ]] || continue
    cp -- "$(family_dir "${tag}")/${name}" "${dir}/${name}"
    printf '%s\n' "${name}"
  done <<<"${names}"
}

# pkgsrc_files TAG DIR REGEN: the files the package installs beside the DKMS
# tree, into DIR: dkms.conf, nvidia-p2p.conf (the module options, REGEN the
# command that puts changed options into the initramfs) and
# nvidia-p2p-depmod.conf (the depmod override).
pkgsrc_files() {
  local tag=$1 dir=$2 regen=$3
  write_dkms_conf "${tag}" >"${dir}/dkms.conf"
  modprobe_conf_text "${tag}" --no-install "${regen}" >"${dir}/nvidia-p2p.conf"
  depmod_conf_text "${DKMS_DEST}" >"${dir}/nvidia-p2p-depmod.conf"
}

# recipe_fn NAME: the first line of the shell function NAME of a recipe
# (PKGBUILD, spec, .install), printed rather than written in the
# here-documents: a function header in lib/ is always one of build.sh's own
# (for grep, and for the call graph between files, which goes by them).
recipe_fn() { printf '%s() {\n' "$1"; }

# pkgsrc_check_fn: the shell function the recipes run first: the tree id of
# the unpacked source (as tree_ids computes it) must be the pinned tree or
# core id. Needs only git. POSIX sh, for PKGBUILD and spec alike.
pkgsrc_check_fn() {
  recipe_fn _nvp2p_check_tree
  cat <<'EOF'
	_ck_dir=$1 _ck_tree=$2 _ck_core=$3
	_ck_tmp=$(mktemp -d) || return 1
	_ck_ids=$(
		export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
		unset GIT_DIR GIT_INDEX_FILE GIT_WORK_TREE
		git init -q --bare "$_ck_tmp/git" || exit 1
		export GIT_DIR="$_ck_tmp/git" GIT_INDEX_FILE="$_ck_tmp/index" GIT_WORK_TREE="$_ck_dir"
EOF
  recipe_fn _g | sed 's/^/\t\t/'
  cat <<'EOF'
			git -c core.autocrlf=false -c core.fileMode=true -c core.symlinks=true \
				-c core.excludesFile=/dev/null -c 'safe.directory=*' "$@"
		}
		cd "$_ck_dir" &&
			_g add -A -f -- . >/dev/null &&
			_ck_full=$(_g write-tree) &&
			_ck_c=$(_g ls-tree "$_ck_full" | awk -F '\t' '$2 != ".github" && $2 != "CHANGELOG.md"' | _g mktree) &&
			echo "$_ck_full $_ck_c"
	)
	_ck_rc=$?
	rm -rf "$_ck_tmp"
	[ "$_ck_rc" -eq 0 ] || { echo "nvidia-p2p: cannot compute the tree id of $_ck_dir" >&2; return 1; }
	case " $_ck_ids " in
	" $_ck_tree "* | *" $_ck_core ") return 0 ;;
	esac
	echo "nvidia-p2p: $_ck_dir is not the pinned source: tree/core $_ck_ids, pinned $_ck_tree / $_ck_core; refusing to build it" >&2
	return 1
}
EOF
}

# pkgsrc_build_text TAG: the shell lines that build the two objects in the
# unpacked, patched source (the current directory) with upstream's rules
# (build_objects does the same here), without the distribution's CFLAGS
# (kernel code: no -fno-plt, no _FORTIFY_SOURCE), then check their ENDBR64
# landing pads (check_endbr). One tab-indented line each.
pkgsrc_build_text() {
  cat <<'EOF'
	unset CFLAGS CXXFLAGS CPPFLAGS LDFLAGS
	make -C "$PWD" -j"$(nproc)" kernel-open/nvidia/nv-kernel.o_binary kernel-open/nvidia-modeset/nv-modeset-kernel.o_binary
	for _o in src/nvidia/_out/Linux_x86_64/nv-kernel.o src/nvidia-modeset/_out/Linux_x86_64/nv-modeset-kernel.o; do
		objdump -d "$_o" | grep -q -w endbr64 || { echo "nvidia-p2p: $_o has no ENDBR64 (built without -fcf-protection=branch): its modules would stop on a CPU with IBT" >&2; exit 1; }
	done
EOF
}

# pkgsrc_install_text DEST: the shell lines that assemble the DKMS tree at
# DEST (make_payload does the same here) from the patched source (the
# current directory) and dkms.conf (in $_files).
pkgsrc_install_text() {
  cat <<EOF
	install -d "$1"
	cp -dr --no-preserve=ownership kernel-open/. "$1/"
	rm -f "$1/nvidia/nv-kernel.o_binary" "$1/nvidia-modeset/nv-modeset-kernel.o_binary"
	install -D -m 0644 src/nvidia/_out/Linux_x86_64/nv-kernel.o "$1/nvidia/nv-kernel.o_binary"
	install -D -m 0644 src/nvidia-modeset/_out/Linux_x86_64/nv-modeset-kernel.o "$1/nvidia-modeset/nv-modeset-kernel.o_binary"
	install -m 0644 "\$_files/dkms.conf" "$1/dkms.conf"
	find "$1" -name .gitignore -delete
EOF
}
