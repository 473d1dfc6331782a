# shellcheck shell=bash
# lib/40-patch.sh: the patch stage. Applies the tag's family of the series to a
# copy of the verified source with quilt, at fuzz 0.
#
# `series` (top level) lists every patch name in apply order. A family
# (patches/<family>/, chosen per tag in versions.conf) provides its own variant
# of each patch under the same name, or names it in its dropped.conf with the
# reason (upstream already does it; the family's kernels do not need it), so
# no patch is ever missing by accident. Every file in a family must be named
# in `series`.
#
# A compat-* patch that backports an upstream fix may say where upstream has
# it, in its DEP-3 header:
#   X-Applied-Upstream-If: <file> <string>
# It is then left out for a tag whose pristine source has <string> in <file>
# (release order is not version order: a fix can be in 580.94.16 and not in
# 580.95.05), or has no <file> at all: the code the patch fixes is not there
# (535.54.03 has no libspdm_shash.c for compat-0008 to fix). A compat patch
# whose code exists only in some tags of its family says so with
#   X-Applies-If: <file> <string>
# and is left out for a tag whose pristine source lacks <string> in <file>
# (compat-0011 of 580-590 needs the CDMM pagemap, which 580.65.06 .. 580.82.09
# do not have). p2p-* patches are never left out either way.

readonly PATCHED_STAMP=".nvidia-p2p-patched"
# The patched tree's content as patch_tree left it: "<path>TAB<sha256>" per
# file ("<path>TAB link:<target>" per symbolic link), sorted; the stamp says
# which series made the tree, the manifest what the tree is. A tree reused
# (patch again, build, package...) is checked against it first.
readonly PATCHED_MANIFEST=".nvidia-p2p-manifest"

help_patch() {
  usage_synopsis patch
  cat <<'EOF'

Apply the patch series to a copy of the verified source of <tag>, with quilt
at fuzz 0. The source comes from the cache (see: build.sh fetch), or from
--source PATH, which is fetched and verified first.

  --out DIR   where to put the patched tree (default: <work-dir>/<tag>/patched)
              DIR must not exist, unless it is a tree this command patched
              (then it is reused when the series is unchanged, else redone).

A tree is reused only when its content is still what patching made: a
manifest of every file (sha256) is recorded beside the stamp, and a file
changed, added or removed since is refused (exit 6), by name, here and by
every command that builds from the tree (build, package, the pipeline);
remove the tree (rm -rf DIR) and patch again.

On failure the rejected hunks are shown and no output directory is left.
Running it again with the same series is a no-op. Prints the patched tree's
directory on stdout. Refused (exit 17) when the disk there has less than
about 160 MiB free, or fills up while patching.
EOF
}

cmd_patch() {
  local tag=""
  parse_stage_args patch tag "$@"
  require_tag "${tag}"
  cache_lock
  fetch_source "${tag}"
  patch_tree "${tag}" "${P2P_OUT:-$(default_patched_dir "${tag}")}"
  printf '%s\n' "${P2P_PATCHED_DIR}"
  if [[ -n ${P2P_OUT} ]]; then
    say_next "build the tree in ${P2P_PATCHED_DIR} yourself; build.sh build ${tag} builds its own patched tree"
  else
    say_next "$(next_cmd build "${tag}")"
  fi
}

# quilt_run DIR PATCHDIR SERIESFILE ARGS...: quilt in DIR with explicit
# settings only (no quiltrc, patches from PATCHDIR, the given series file).
# quilt records the patches directory of the first push in .pc/.quilt_patches
# and prefers it to QUILT_PATCHES: a tree patched from another checkout (CI's
# clone, since removed) would look for its patches there, and "pop" would
# fail with "does not remove cleanly". The record is removed first.
quilt_run() {
  local dir=$1 patches=$2 series=$3
  shift 3
  rm -f -- "${dir}/.pc/.quilt_patches"
  (cd "${dir}" && env LC_ALL=C QUILT_PATCHES="${patches}" QUILT_SERIES="${series}" \
    QUILT_PC=.pc quilt --quiltrc - "$@")
}

# quilt_in DIR TAG SERIESFILE ARGS...: quilt_run with the tag's family.
quilt_in() {
  quilt_run "$1" "$(family_dir "$2")" "$3" "${@:4}"
}

# patch_tree TAG OUT: sets P2P_PATCHED_DIR (build.sh) to a tree with
# the series applied.
patch_tree() {
  local tag=$1 out=$2 fingerprint series tmp rc=0
  need_cmd quilt quilt
  series=$(tag_series "${tag}") || exit "$?"
  fingerprint=$(series_fingerprint "${tag}") || exit "$?"
  local unmet
  unmet=$(family_requires_unmet "${tag}" "$(cache_src_dir "${tag}")") || exit "$?"
  [[ -z ${unmet} || ${P2P_DRY_RUN} -eq 1 ]] ||
    die "${EX_PATCH}" "family ${V_FAMILY[${tag}]} does not fit ${tag}: ${unmet//$'\n'/; }"
  P2P_PATCHED_DIR=${out}
  if [[ -e ${out} ]]; then
    if [[ -f ${out}/${PATCHED_STAMP} && "$(cat "${out}/${PATCHED_STAMP}")" == "${fingerprint}" ]]; then
      if [[ -f ${out}/${PATCHED_MANIFEST} ]]; then
        patched_tree_check "${tag}" "${out}"
        stage patch "${out} is already patched with this series"
        return 0
      fi
      # patched by a build.sh that recorded no manifest: its content cannot
      # be checked, so it is made again
      stage patch "${out} has no manifest of its content: patching it again"
    fi
    [[ -f ${out}/${PATCHED_STAMP} ]] ||
      die "${EX_USAGE}" "--out ${out} exists and is not a tree patched by build.sh; choose a new directory"
  fi
  if [[ ${P2P_DRY_RUN} -eq 1 && ! -d $(cache_src_dir "${tag}") ]]; then
    # not fetched yet: which compat patches upstream already has is not known
    series=$(tag_series_unfetched "${tag}") || exit "$?"
    stage patch "${tag}: family ${V_FAMILY[${tag}]}, up to $(grep -c . <<<"${series}") patches, fuzz 0"
    printf 'would apply to a copy of %s (not fetched yet), into %s:\n' "$(cache_src_dir "${tag}")" "${out}"
    printf '  %s\n' "${series//$'\n'/$'\n'  }"
    return 0
  fi
  stage patch "${tag}: family ${V_FAMILY[${tag}]}, $(grep -c . <<<"${series}") patches, fuzz 0"
  if [[ ${P2P_DRY_RUN} -eq 1 ]]; then
    printf 'would apply to a copy of %s, into %s:\n' "$(cache_src_dir "${tag}")" "${out}"
    printf '  %s\n' "${series//$'\n'/$'\n'  }"
    space_check "$(dirname "${out}")" patch "the patched tree of ${tag}"
    return 0
  fi
  space_check "$(dirname "${out}")" patch "the patched tree of ${tag}"
  mkdir -p "$(dirname "${out}")"
  mk_temp_dir "$(dirname "${out}")"
  tmp=${P2P_TMP}
  run_captured write_lines "${tmp}/series" "${series}" ||
    write_failed "${tmp}" "writing the series of ${tag}" "${EX_FAIL}" "cannot write ${tmp}/series"
  run_captured cp -a -- "$(cache_src_dir "${tag}")" "${tmp}/tree" ||
    write_failed "${tmp}" "copying the source of ${tag} to patch it" "${EX_FAIL}" "cannot copy $(cache_src_dir "${tag}")"
  run_captured quilt_in "${tmp}/tree" "${tag}" "${tmp}/series" push -a --fuzz=0 -q || rc=$?
  if [[ ${rc} -eq 2 && ! -s ${tmp}/series ]]; then
    rc=0 # quilt's "nothing to do": an empty series
  fi
  if [[ ${rc} -ne 0 ]]; then
    patch_failure "${tag}" "${tmp}"
  fi
  # quilt records the series file's path in .pc/.quilt_series and prefers it
  # to QUILT_SERIES; keep the series inside .pc, by a relative name, so quilt
  # keeps working in this tree and in copies of it (build trees, bisect). The
  # patches directory's record (this checkout's path) goes: see quilt_run.
  if [[ -d ${tmp}/tree/.pc ]]; then
    cp -- "${tmp}/series" "${tmp}/tree/.pc/nvidia-p2p.series"
    printf 'nvidia-p2p.series\n' >"${tmp}/tree/.pc/.quilt_series"
    rm -f -- "${tmp}/tree/.pc/.quilt_patches"
  fi
  printf '%s' "${fingerprint}" >"${tmp}/tree/${PATCHED_STAMP}"
  tree_manifest "${tmp}/tree" >"${tmp}/manifest" || die "${EX_FAIL}" "cannot record the content of the patched tree of ${tag}"
  mv -- "${tmp}/manifest" "${tmp}/tree/${PATCHED_MANIFEST}"
  rm -rf -- "${out}"
  mv -- "${tmp}/tree" "${out}"
  verbose "patched tree: ${out}"
}

# tree_manifest DIR: the manifest (PATCHED_MANIFEST) of DIR's content, less
# the stamp and the manifest themselves. Every file is read (sha256; one
# sha256sum at a time, whose lines cannot interleave): a fake tree of 100k
# files and 390 MB took 2.5 to 5 s on 2 busy cores, about half the time of
# the copy (cp -a) that a build makes of it; a real patched tree is ~100 MB.
tree_manifest() {
  local dir=$1
  (
    cd -- "${dir}" || exit "${EX_FAIL}"
    {
      find . \( -path "./${PATCHED_STAMP}" -o -path "./${PATCHED_MANIFEST}" \) -prune -o -type f -printf '%P\0' |
        xargs -0 -r sha256sum -- | sed -E 's/^(\\?[0-9a-f]{64})  (.*)$/\2\t\1/'
      find . -type l -printf '%P\tlink:%l\n'
    } | LC_ALL=C sort
  )
}

# patched_tree_check TAG DIR: DIR's content is what its manifest recorded;
# else EX_CHECKSUM, naming what changed, was added or was removed.
patched_tree_check() {
  local tag=$1 dir=$2 what
  verbose "checking ${dir} against its manifest"
  tree_manifest "${dir}" | cmp -s -- - "${dir}/${PATCHED_MANIFEST}" && return 0
  what=$(tree_manifest "${dir}" | manifest_diff "${dir}/${PATCHED_MANIFEST}") || what=""
  die "${EX_CHECKSUM}" "${dir} changed since it was patched (${what:-it cannot be read completely}): a tree that is not what the series made is neither reused nor built. Remove it (rm -rf -- ${dir}) and run build.sh patch ${tag} again"
}

# manifest_diff OLD: what the manifest on stdin changed, added and removed
# against the manifest OLD, five names of each at most ("changed: a, b;
# added: c; removed: d, e and 3 more").
manifest_diff() {
  awk -F '\t' '
    function key(line) { return substr(line, 1, length(line) - length($NF) - 1) }
    function add(kind, name) { n[kind]++; if (n[kind] <= 5) list[kind] = list[kind] (n[kind] > 1 ? ", " : "") name }
    BEGIN {
      while ((getline line < ARGV[1]) > 0) {
        nf = split(line, f, "\t")
        k = substr(line, 1, length(line) - length(f[nf]) - 1)
        old[k] = f[nf]
        order[++count] = k
      }
      ARGV[1] = ""
    }
    { k = key($0); seen[k] = 1; if (!(k in old)) add("added", k); else if (old[k] != $NF) add("changed", k) }
    END {
      for (i = 1; i <= count; i++) if (!(order[i] in seen)) add("removed", order[i])
      split("changed added removed", kinds, " ")
      for (i = 1; i <= 3; i++) {
        kind = kinds[i]
        if (!n[kind]) continue
        out = out (out == "" ? "" : "; ") kind ": " list[kind] (n[kind] > 5 ? " and " n[kind] - 5 " more" : "")
      }
      print out
    }' "$1" -
}

# patch_failure TAG TMP: show quilt's output and the rejected hunks, then die;
# the temp tree is removed at exit, so no output is left behind.
# A disk that filled up is said so (write_failed), not blamed on a patch.
patch_failure() {
  local tag=$1 tmp=$2 failed rej
  if says_disk_full "${P2P_CAPTURED}" || [[ "$(disk_free_mib "${tmp}" || echo 1)" -lt 1 ]]; then
    write_failed "${tmp}" "applying the series to ${tag}" "${EX_PATCH}" "quilt failed"
  fi
  failed=$(quilt_in "${tmp}/tree" "${tag}" "${tmp}/series" next 2>/dev/null || true)
  [[ -z ${P2P_CAPTURED} ]] || printf '  quilt: %s\n' "${P2P_CAPTURED//$'\n'/$'\n'  quilt: }" >&2
  quilt_in "${tmp}/tree" "${tag}" "${tmp}/series" push -f --fuzz=0 -q >/dev/null 2>&1 || true
  while IFS= read -r rej; do
    printf '%s: rejected hunks in %s:\n' "${P2P_PROG}" "${rej#"${tmp}/tree/"}" >&2
    sed 's/^/  /' "${rej}" >&2
  done < <(find "${tmp}/tree" -name '*.rej' -type f | sort)
  die "${EX_PATCH}" "${failed:-a patch} does not apply at fuzz 0 to ${tag} (family ${V_FAMILY[${tag}]}); nothing was written"
}
