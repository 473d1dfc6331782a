# shellcheck shell=bash
# lib/74-rpm.sh: `build.sh package <tag> --format rpm`: a spec of a DKMS RPM
# for Fedora and RHEL (and their rebuilds), its source RPM, and the binary
# RPM rpmbuild makes from it.
#
# The package nvidia-p2p-dkms takes the place of the distributions' NVIDIA
# kernel module package of the same version, as negativo17's dkms-nvidia
# does: it provides nvidia-kmod = 3:<tag> (what the userspace packages of
# negativo17, NVIDIA's CUDA repositories and RPM Fusion require of a kernel
# module package, epoch 3 theirs) and conflicts with the packages that put
# the modules on the system (RPM_CONFLICTS); it recommends their userspace of
# exactly <tag> (rich dependency: any of them). %prep checks NVIDIA's tarball
# against the pin and applies the family's series at fuzz 0
# (lib/72-pkgsrc.sh); %build builds the two kernel-independent objects;
# %install lays out the DKMS tree /usr/src/nvidia-p2p-<tag>, the options
# /usr/lib/modprobe.d/nvidia-p2p.conf and the depmod override
# /usr/lib/depmod.d/nvidia-p2p.conf. %post has DKMS build and install the
# modules for every kernel with headers; %preun removes them (dkms.conf's
# NO_WEAK_MODULES keeps RHEL's weak-modules out: write_dkms_conf).
#
# Written into <out>: nvidia-p2p-dkms-<tag>-<rev>.src.rpm (the spec and its
# sources, NVIDIA's tarball made from the verified source) and
# nvidia-p2p-dkms-<tag>-<rev>.x86_64.rpm.

# The kernel module packages this one replaces (Conflicts): RPM Fusion's
# akmod-nvidia / kmod-nvidia, negativo17's dkms-nvidia / dkms-nvidia-open and
# their kmod-nvidia*, NVIDIA's CUDA repositories' kmod-nvidia-open-dkms and
# kmod-nvidia-latest-dkms.
readonly RPM_CONFLICTS="akmod-nvidia kmod-nvidia kmod-nvidia-open dkms-nvidia dkms-nvidia-open kmod-nvidia-open-dkms kmod-nvidia-latest-dkms"

# rpm_file TAG ARCH: the (source) RPM's file name.
rpm_file() { printf '%s.%s.rpm\n' "$(pkg_base "$1")" "$2"; }

# rpm_preflight: what rpmbuild needs, before anything is fetched or written.
rpm_preflight() {
  need_cmd rpmbuild rpm
  need_cmd git git
  need_cmd objdump binutils
  need_cmd make make
  need_cmd xz xz-utils
}

# rpm_userspace_check TAG: on an RPM system, its NVIDIA CUDA libraries (the
# package recommends those of TAG; the userspace packages require
# nvidia-kmod of their own version) must be TAG.
rpm_userspace_check() {
  local v="" p
  command -v rpm >/dev/null 2>&1 || return 0
  for p in nvidia-driver-cuda-libs xorg-x11-drv-nvidia-cuda-libs; do
    v=$(rpm -q --qf '%{VERSION}\n' "${p}" 2>/dev/null | head -n 1) || v=""
    [[ ${v} =~ ^[0-9] ]] || v=""
    pkg_userspace_check "$1" "${p}" "${v}" "dnf install ${p}-3:$1 from the repository of your driver"
  done
}

# rpm_package TAG: fetch and verify, check that the series applies, write the
# spec and its sources, build the source and binary RPMs; print both paths.
rpm_package() {
  local tag=$1 out scratch rpm srpm rc=0
  out=${P2P_OUT:-$(pwd -P)}
  rpm="${out}/$(rpm_file "${tag}" x86_64)"
  srpm="${out}/$(rpm_file "${tag}" src)"
  pkgsrc_prepare "${tag}" spec
  if [[ ${P2P_DRY_RUN} -eq 1 ]]; then
    printf 'would write the spec and build %s and %s with rpmbuild\n' "${rpm}" "${srpm}" >&2
    printf '%s\n%s\n' "${rpm}" "${srpm}"
    return 0
  fi
  mkdir -p "${out}"
  mk_temp_dir "${out}"
  scratch=${P2P_TMP}
  mkdir -p "${scratch}/SOURCES" "${scratch}/SPECS"
  rpm_recipe "${tag}" "${scratch}/SOURCES" >"${scratch}/SPECS/${P2P_PKG_NAME}.spec"
  stage rpmbuild "${P2P_PKG_NAME} ${tag}: check the source, apply the series, build nv-kernel.o and nv-modeset-kernel.o (about 3 minutes on 2 idle cores)"
  # --nodeps: the build dependencies are this machine's tools (rpm_preflight
  # checked them), not packages in an RPM database. The packager goes into
  # both RPMs' headers as rpmbuild's macro (a Packager tag in the spec would
  # be the same for everyone who rebuilds it).
  run_logged rpmbuild -ba --nodeps --define "_topdir ${scratch}" --define "_rpmdir ${scratch}/RPMS" \
    --define "_srcrpmdir ${scratch}/SRPMS" --define "_build_id_links none" --define "packager $(pkg_maintainer)" \
    "${scratch}/SPECS/${P2P_PKG_NAME}.spec" || rc=$?
  if [[ ${rc} -ne 0 || ! -f ${scratch}/RPMS/x86_64/$(rpm_file "${tag}" x86_64) || ! -f ${scratch}/SRPMS/$(rpm_file "${tag}" src) ]]; then
    show_build_errors
    die "${EX_BUILD}" "rpmbuild could not build ${P2P_PKG_NAME} ${tag} (exit ${rc}); full log: ${P2P_LOG_FILE:-none}; nothing was written"
  fi
  mv -f -- "${scratch}/SRPMS/$(rpm_file "${tag}" src)" "${srpm}"
  mv -f -- "${scratch}/RPMS/x86_64/$(rpm_file "${tag}" x86_64)" "${rpm}"
  printf '%s\n%s\n' "${rpm}" "${srpm}"
}

# rpm_recipe TAG DIR: the sources into DIR, the spec on stdout.
rpm_recipe() {
  local tag=$1 dir=$2 name
  local -a patches=()
  pkgsrc_tarball "${tag}" "${dir}"
  while IFS= read -r name; do patches+=("${name}"); done < <(pkgsrc_patches "${tag}" "${dir}")
  pkgsrc_files "${tag}" "${dir}" "dracut -f"
  rpm_lint_filters >"${dir}/${P2P_PKG_NAME}.rpmlintrc"
  # spaces only: rpmlint warns about a spec that mixes them with tabs
  rpm_spec "${tag}" "${patches[@]}" | expand -t 4
}

# rpm_spec TAG PATCH...: the spec.
rpm_spec() {
  local tag=$1 p i=0 c
  shift
  cat <<EOF
# Spec of ${P2P_PKG_NAME} ${tag}-${P2P_REVISION}, written by nvidia-p2p build.sh
# ${P2P_VERSION} (\`build.sh package ${tag} --format rpm\`): NVIDIA's open kernel
# modules ${tag} with the PCIe P2P series of family ${V_FAMILY[${tag}]}, as DKMS source.
%global debug_package %{nil}
%global _default_patch_fuzz 0
%global dkms_name ${DKMS_MODULE}
# The pinned upstream tree: git tree id of the tag, and without .github/ and
# CHANGELOG.md (NVIDIA's tarball); the prep section refuses any other source.
%global src_tree ${V_TREE[${tag}]}
%global src_core ${V_CORE[${tag}]}

Name:           ${P2P_PKG_NAME}
Version:        ${tag}
Release:        ${P2P_REVISION}
Summary:        NVIDIA open kernel modules with PCIe P2P for GeForce GPUs (DKMS source)
License:        MIT OR GPL-2.0-only
Group:          System Environment/Kernel
URL:            https://github.com/NVIDIA/open-gpu-kernel-modules
ExclusiveArch:  x86_64

Source0:        $(pkgsrc_url "${tag}")
Source1:        dkms.conf
Source2:        nvidia-p2p.conf
Source3:        nvidia-p2p-depmod.conf
Source4:        ${P2P_PKG_NAME}.rpmlintrc
EOF
  for p in "$@"; do
    printf 'Patch%d:%*s%s\n' "${i}" $((10 - ${#i})) '' "${p}"
    i=$((i + 1))
  done
  cat <<EOF

BuildRequires:  gcc
BuildRequires:  gcc-c++
BuildRequires:  make
BuildRequires:  binutils
BuildRequires:  git-core
Requires:       dkms
Provides:       nvidia-kmod = 3:%{version}
EOF
  for c in ${RPM_CONFLICTS}; do printf 'Conflicts:      %s\n' "${c}"; done
  cat <<'EOF'
Recommends:     (nvidia-driver-cuda-libs = 3:%{version} or xorg-x11-drv-nvidia-cuda-libs = 3:%{version})

%description
NVIDIA's open GPU kernel modules with the nvidia-p2p patch series: PCIe BAR1
peer-to-peer for consumer GPUs (RTX 3090, RTX 4090). DKMS builds and installs
nvidia, nvidia-uvm, nvidia-modeset, nvidia-drm and nvidia-peermem for every
kernel with headers, now and after kernel updates.

/usr/lib/modprobe.d/nvidia-p2p.conf sets the driver options that switch P2P
on (a copy in /etc/modprobe.d overrides it). The userspace driver of exactly
this version is needed beside it.

EOF
  printf '%%prep\n'
  pkgsrc_check_fn
  cat <<'EOF'
%setup -q -n NVIDIA-kernel-module-source-%{version}
_nvp2p_check_tree "$PWD" %{src_tree} %{src_core}
%autopatch -p1

%build
EOF
  pkgsrc_build_text | sed 's/^\t//'
  cat <<'EOF'

%install
_files=$(dirname "%{SOURCE1}")
EOF
  pkgsrc_install_text "%{buildroot}%{_usrsrc}/%{dkms_name}-%{version}" | sed 's/^\t//'
  cat <<'EOF'
install -Dm644 %{SOURCE2} %{buildroot}%{_prefix}/lib/modprobe.d/nvidia-p2p.conf
install -Dm644 %{SOURCE3} %{buildroot}%{_prefix}/lib/depmod.d/nvidia-p2p.conf

%post
if [ -z "$(dkms status -m %{dkms_name} -v %{version})" ]; then
	dkms add -m %{dkms_name} -v %{version} -q --rpm_safe_upgrade || :
fi
for dir in /lib/modules/*; do
	[ -d "$dir" ] || continue
	if [ ! -e "$dir/build/Makefile" ]; then
		echo "%{name}: no headers for kernel ${dir##*/}: DKMS builds %{dkms_name} when they are installed" >&2
		continue
	fi
	dkms install -m %{dkms_name} -v %{version} -k "${dir##*/}" -q ||
		echo "%{name}: DKMS could not build %{dkms_name}/%{version} for ${dir##*/} (see /var/lib/dkms/%{dkms_name}/%{version}/build/make.log)" >&2
done
echo "%{name}: the P2P options are in /usr/lib/modprobe.d/nvidia-p2p.conf; run dracut -f, reboot, and check with: build.sh verify" >&2

%preun
dkms remove -m %{dkms_name} -v %{version} -q --all --rpm_safe_upgrade || :

%files
%license COPYING
%{_usrsrc}/%{dkms_name}-%{version}
%{_prefix}/lib/modprobe.d/nvidia-p2p.conf
%{_prefix}/lib/depmod.d/nvidia-p2p.conf

%changelog
EOF
  printf '* %s %s - %s-%s\n- %s\n' "$(LC_ALL=C date -u -d "@$(pkg_epoch)" '+%a %b %d %Y')" "$(pkg_maintainer)" "${tag}" "${P2P_REVISION}" \
    "NVIDIA's open kernel modules ${tag} with the nvidia-p2p series of family ${V_FAMILY[${tag}]} (build.sh ${P2P_VERSION})"
}

# rpm_lint_filters: the rpmlintrc beside the spec (Source4, as openSUSE's
# packages carry theirs): what rpmlint 2.x with its upstream defaults (as
# Debian ships it) reports about this package that is right for a DKMS
# source package, each with why; `rpmlint -r` with it reports nothing on
# either RPM (the unit tier checks that).
rpm_lint_filters() {
  cat <<'EOF'
# rpmlint filters for nvidia-p2p-dkms (rpmlint -r THIS FILE *.rpm).
# A DKMS source package: the kernel sources and NVIDIA's prebuilt objects
# are in /usr/src for DKMS to build from; nothing is run from the package.
addFilter("devel-file-in-non-devel-package /usr/src/")
addFilter("no-binary")
addFilter("only-non-binary-in-usr-lib")
addFilter("no-documentation")
# kmod reads modprobe.d and depmod.d in /usr/lib on every architecture.
addFilter("hardcoded-library-path in (%\{_prefix\}|/usr)/lib/(modprobe|depmod)\.d/")
# The series must apply exactly (fuzz 0), as build.sh applies it.
addFilter("patch-fuzz-is-changed")
# A local build: the repository that publishes it signs it.
addFilter("no-signature")
# rpmbuild sets the build root itself (RPM 4.6 and later).
addFilter("no-buildroot-tag")
# rpmlint's upstream defaults list no valid license at all (Fedora's and
# openSUSE's configurations list SPDX names such as these).
addFilter("invalid-license (MIT|GPL-2\.0-only)$")
EOF
}
