#!/usr/bin/env bats
# --nvlink keep|off: what each family's options file says for GPU pairs
# joined by an NVLink bridge, through install, package and repo, and the
# refusal where a family cannot keep NVLink.

load ../test_helper

# conf_of TAG [MODE]: the options file build.sh writes for TAG of the real
# data (versions.conf, patches/) with --nvlink MODE (none: the default).
conf_of() {
  bash -c 'source "$1" && versions_load && P2P_NVLINK=$3 && modprobe_conf_text "$2"' _ "${REPO_ROOT}/build.sh" "$1" "${2:-}"
}

@test "families 575 and later keep NVLink by default (RMForceP2PType=0), --nvlink off forces BAR1 (1)" {
  local tag
  for tag in 575.51.02 575.64.05 580.65.06 590.48.01 595.45.04; do
    run conf_of "${tag}"
    assert_success
    assert_line 'options nvidia NVreg_EnableResizableBar=1 NVreg_RegistryDwords="ForceP2P=0x11;RMForceP2PType=0;RMPcieP2PType=1;RMForceStaticBar1=2"'
    assert_line --partial "# NVLink: kept (--nvlink keep)"
    run conf_of "${tag}" keep
    assert_line 'options nvidia NVreg_EnableResizableBar=1 NVreg_RegistryDwords="ForceP2P=0x11;RMForceP2PType=0;RMPcieP2PType=1;RMForceStaticBar1=2"'
    run conf_of "${tag}" off
    assert_success
    assert_line 'options nvidia NVreg_EnableResizableBar=1 NVreg_RegistryDwords="ForceP2P=0x11;RMForceP2PType=1;RMPcieP2PType=1;RMForceStaticBar1=2"'
    assert_line --partial "# NVLink: off"
  done
}

@test "families 535 to 570 keep NVLink by default (RMBar1P2PKeepNvlink=1, p2p-0006), --nvlink off writes 0" {
  local tag
  for tag in 535.54.03 550.163.01 560.35.03 570.211.01; do
    run conf_of "${tag}"
    assert_success
    assert_line 'options nvidia NVreg_EnableResizableBar=1 NVreg_RegistryDwords="ForceP2P=0x11;RMForceP2PType=2;RMBar1P2PKeepNvlink=1"'
    assert_line --partial "# NVLink: kept (--nvlink keep)"
    run conf_of "${tag}" keep
    assert_line 'options nvidia NVreg_EnableResizableBar=1 NVreg_RegistryDwords="ForceP2P=0x11;RMForceP2PType=2;RMBar1P2PKeepNvlink=1"'
    run conf_of "${tag}" off
    assert_success
    assert_line 'options nvidia NVreg_EnableResizableBar=1 NVreg_RegistryDwords="ForceP2P=0x11;RMForceP2PType=2;RMBar1P2PKeepNvlink=0"'
    assert_line --partial "# NVLink: off (--nvlink off)"
  done
}

@test "every family can keep NVLink: RMForceP2PType=0 with its DEFAULT numbering required, or RMBar1P2PKeepNvlink=1 with p2p-0006" {
  local f dir kv n=0
  for f in "${REPO_ROOT}"/patches/*/modprobe.conf; do
    dir=$(dirname "${f}")
    kv=$(sed -n -E 's/^#[[:space:]]*nvlink-keep:[[:space:]]*//p' "${f}")
    n=$((n + 1))
    case ${kv} in
    RMForceP2PType=0)
      run grep -c '^# requires: src/nvidia/interface/nvrm_registry.h NV_REG_STR_RM_FORCE_P2P_TYPE_DEFAULT 0x00000000$' "${f}"
      assert_output 1
      assert_file_not_exist "${dir}/p2p-0006-nvlink-kept-with-bar1-p2p.patch"
      run grep -c '^p2p-0006-nvlink-kept-with-bar1-p2p.patch  ' "${dir}/dropped.conf"
      assert_output 1
      ;;
    RMBar1P2PKeepNvlink=1)
      assert_file_exist "${dir}/p2p-0006-nvlink-kept-with-bar1-p2p.patch"
      run grep -c '^+#define NV_REG_STR_RM_BAR1_P2P_KEEP_NVLINK  *"RMBar1P2PKeepNvlink"$' "${dir}/p2p-0006-nvlink-kept-with-bar1-p2p.patch"
      assert_output 1
      run grep -c '^options nvidia .*[";]RMForceP2PType=2;RMBar1P2PKeepNvlink=0"$' "${f}"
      assert_output 1
      ;;
    *) fail "${f}: no or an unknown '# nvlink-keep:' (${kv})" ;;
    esac
  done
  assert_equal "${n}" "$(awk '!/^#/ && NF { print $2 }' "${REPO_ROOT}/versions.conf" | sort -u | wc -l)"
}

@test "a family without '# nvlink-keep:' refuses --nvlink keep (3) and writes the forcing options otherwise" {
  common_setup
  make_fixture
  run bash -c 'source "$1" && versions_load && P2P_NVLINK=keep && modprobe_conf_text "$2"' _ "${BUILD_SH}" "${FIXTURE_TAG}"
  assert_failure 3
  assert_output "build.sh: --nvlink keep: family 999 (${FIXTURE_TAG}) cannot keep NVLink for bridged pairs: its options have no '# nvlink-keep:' setting (see docs/how-it-works.md, Mixed boxes); use --nvlink off"
  run bash -c 'source "$1" && versions_load && modprobe_conf_text "$2"' _ "${BUILD_SH}" "${FIXTURE_TAG}"
  assert_success
  assert_line --partial "# NVLink: off (the only mode of family 999)"
}

@test "--nvlink takes keep or off only, and only where options are written (2)" {
  common_setup
  run "${BUILD_SH}" install 580.65.06 --nvlink on
  assert_failure 2
  assert_output "build.sh: --nvlink takes keep or off, not 'on'"
  run "${BUILD_SH}" build 580.65.06 --nvlink off
  assert_failure 2
  assert_output --partial "option --nvlink does not apply to build"
  run "${BUILD_SH}" install 580.65.06 --nvlink
  assert_failure 2
  assert_output "build.sh: --nvlink needs a value"
}

@test "a malformed '# nvlink-keep:' line or a key the options line lacks is a data error (4)" {
  common_setup
  make_fixture
  local conf="${NVP2P_DATA_DIR}/patches/999/modprobe.conf"
  printf '# nvlink-keep: RMForceP2PType=zero\n' >>"${conf}"
  run bash -c 'source "$1" && versions_load && modprobe_conf_text "$2"' _ "${BUILD_SH}" "${FIXTURE_TAG}"
  assert_failure 4
  assert_output --partial "'# nvlink-keep:' needs KEY=VALUE, not 'RMForceP2PType=zero'"
  sed -i 's/RMForceP2PType=zero/RMOther=0/' "${conf}"
  run bash -c 'source "$1" && versions_load && modprobe_conf_text "$2"' _ "${BUILD_SH}" "${FIXTURE_TAG}"
  assert_failure 4
  assert_output --partial "its options line has no RMOther for '# nvlink-keep: RMOther=0'"
}

@test "package --nvlink: the options file of the package says the mode; keep refused (3) before anything is built" {
  common_setup
  make_fixture
  command -v dpkg-deb >/dev/null || skip "dpkg-deb not installed"
  local out="${BATS_TEST_TMPDIR}/out" x="${BATS_TEST_TMPDIR}/x"
  run_build package "${FIXTURE_TAG}" --source "${FIX}/upstream" --out "${out}" --no-ccache --nvlink keep
  assert_failure 3
  assert_output --partial "--nvlink keep: family 999 (${FIXTURE_TAG}) cannot keep NVLink"
  assert_not_exist "${out}"
  [[ -z $(find "${WORK}" -name '*.o' 2>/dev/null) ]]
  printf '# nvlink-keep: RMForceP2PType=0\n' >>"${NVP2P_DATA_DIR}/patches/999/modprobe.conf"
  run_build package "${FIXTURE_TAG}" --source "${FIX}/upstream" --out "${out}" --no-ccache
  assert_success
  dpkg-deb -R "${out}/nvidia-p2p-dkms_${FIXTURE_TAG}-1_amd64.deb" "${x}"
  run cat "${x}/usr/lib/modprobe.d/nvidia-p2p.conf"
  assert_line 'options nvidia NVreg_RegistryDwords="RMForceP2PType=0"'
  rm -rf "${out}" "${x}"
  run_build package "${FIXTURE_TAG}" --source "${FIX}/upstream" --out "${out}" --no-ccache --nvlink off
  assert_success
  dpkg-deb -R "${out}/nvidia-p2p-dkms_${FIXTURE_TAG}-1_amd64.deb" "${x}"
  run cat "${x}/usr/lib/modprobe.d/nvidia-p2p.conf"
  assert_line 'options nvidia NVreg_RegistryDwords="RMForceP2PType=2"'
  assert_line --partial "# NVLink: off"
}

@test "family_load reads the family's modprobe.conf and decides the NVLink mode once: the stages use what it read" {
  local data="${BATS_TEST_TMPDIR}/data"
  mkdir -p "${data}"
  cp -a "${REPO_ROOT}/versions.conf" "${REPO_ROOT}/series" "${REPO_ROOT}/patches" "${data}/"
  export NVP2P_DATA_DIR="${data}"
  # loaded, then the file goes: the options, the settings and the mode come from the load
  run bash -c 'source "$1" && versions_load && family_load 575.64.05 &&
    rm "$2/patches/575/modprobe.conf" && modprobe_conf_text 575.64.05 && nvlink_keep_setting 575.64.05 && echo && nvlink_mode 575.64.05' \
    _ "${REPO_ROOT}/build.sh" "${data}"
  assert_success
  assert_line 'options nvidia NVreg_EnableResizableBar=1 NVreg_RegistryDwords="ForceP2P=0x11;RMForceP2PType=0;RMPcieP2PType=1;RMForceStaticBar1=2"'
  assert_line "RMForceP2PType=0"
  assert_line keep
  # not loaded: the missing file is a data error (4), as before
  run bash -c 'source "$1" && versions_load && modprobe_conf_text 575.64.05' _ "${REPO_ROOT}/build.sh"
  assert_failure 4
  assert_output --partial "missing ${data}/patches/575/modprobe.conf"
}
