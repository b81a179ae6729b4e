#!/usr/bin/env bash
# `make deb`: build/moonadm_<version>_<arch>.deb from `make install DESTDIR=<stage> PREFIX=/usr`.
#   packaging/build-deb.sh BIN OUTDIR
# Depends: the shared libraries the binary links (dpkg-shlibdeps: package names with the minimum
# versions their symbols need) and the package of each Lua C module the scripts require at run time
# (cjson: everywhere; luv: the lab only, so Recommends). Built-Using: the Debian source packages of the
# libraries linked in statically (OpenSSL, GMP, nettle, Lua, libyaml). The version is the binary's own.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
bin=${1:?usage: packaging/build-deb.sh BIN OUTDIR}
out=${2:?usage: packaging/build-deb.sh BIN OUTDIR}
die() { echo "deb: $*" >&2; exit 1; }
for t in dpkg-deb dpkg-shlibdeps dpkg-query; do
  command -v "$t" >/dev/null || die "$t is missing (Debian package dpkg-dev): run make deps"
done
case "$bin" in /*) ;; *) bin=$PWD/$bin ;; esac
[ -x "$bin" ] || die "$bin is missing: run make"

version=$("$bin" version -o short) || die "\`$bin version -o short\` failed"
version=${version#v}
[[ $version =~ ^[0-9][A-Za-z0-9.+~-]*$ ]] || die "not a Debian version: '$version' (from moonadm version -o short)"
arch=$(dpkg --print-architecture)

# Reproducible: file dates and man page dates are the last commit's (dpkg-deb clamps to it).
if [ -z "${SOURCE_DATE_EPOCH:-}" ] && git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
  SOURCE_DATE_EPOCH=$(git -C "$top" log -1 --format=%ct 2>/dev/null || true)
  [ -z "$SOURCE_DATE_EPOCH" ] || export SOURCE_DATE_EPOCH
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/moonadm-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
stage=$work/debian/moonadm   # dpkg-shlibdeps' layout: the package's files under debian/<package>
"${MAKE:-make}" -s --no-print-directory -C "$top" install BIN="${bin#"$top"/}" DESTDIR="$stage" PREFIX=/usr \
  SYSTEMDUNITDIR=/usr/lib/systemd/system >/dev/null
# As Debian's packaging does (dh_strip): no debug information in the package.
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$stage/usr/bin/moonadm"

# Shared libraries -> packages (with the versions the symbols need).
printf 'Source: moonadm\n\nPackage: moonadm\nArchitecture: any\n' > "$work/debian/control"
shlibs=$(cd "$work" && dpkg-shlibdeps -O debian/moonadm/usr/bin/moonadm 2>"$work/shlibdeps.err") ||
  { cat "$work/shlibdeps.err" >&2; die "dpkg-shlibdeps failed"; }
depends=${shlibs#shlibs:Depends=}
[ -n "$depends" ] && [ "$depends" != "$shlibs" ] || die "dpkg-shlibdeps gave no Depends: $shlibs"
# libcurl is loaded on the first request (engine/libcurl.c: dlopen), so shlibdeps cannot see it.
depends="$depends, libcurl4 (>= 7.85.0)"

# Lua C modules -> packages.
lua_pkg() { # module -> the package owning the .so the binary's Lua would load
  local m=$1 line path owner
  line=$("$stage/usr/bin/moonadm" lua "$here/lua-modules.lua" "$m") || die "cannot ask the binary's Lua for $m"
  path=${line#*$'\t'}
  [ -n "$path" ] && [ "$path" != "-" ] || die "the Lua module $m is not installed (Debian package lua-$m): run make deps"
  owner=$(dpkg-query -S "$(readlink -f "$path")" 2>/dev/null || dpkg-query -S "$path" 2>/dev/null) ||
    die "no Debian package owns $path (the Lua module $m)"
  owner=${owner%%:*}
  echo "${owner%%,*}"
}
depends="$depends, $(lua_pkg cjson)"
recommends=$(lua_pkg luv)

# Built-Using (Debian policy 7.8): the source package and exact version of each library linked in
# statically (Makefile LDLIBS), so that a security update of one shows which packages to rebuild. A
# library the binary loads dynamically instead (NEEDED: a build that links it so) is in Depends.
needed=$(readelf -d "$stage/usr/bin/moonadm" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p') ||
  die "readelf -d failed on the binary"
built_using=
for lib in libssl-dev:libcrypto.so libgmp-dev:libgmp.so nettle-dev:libnettle.so liblua5.4-dev:liblua5.4.so \
           libyaml-dev:libyaml-0.so; do
  dev=${lib%%:*} so=${lib#*:}
  grep -q "^$so" <<<"$needed" && continue
  src=$(dpkg-query -W -f='${source:Package} (= ${source:Version})' "$dev" 2>/dev/null) && [ -n "$src" ] ||
    die "dpkg-query knows no $dev, whose library the binary holds (Built-Using): run make deps"
  built_using="${built_using:+$built_using, }$src"
done

mkdir -p "$stage/DEBIAN"
size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
maintainer=${DEB_MAINTAINER:-moonadm maintainers <moonadm@localhost>}
sed -e "s/@VERSION@/$version/" -e "s|@MAINTAINER@|$maintainer|" -e "s/@ARCH@/$arch/" -e "s/@SIZE@/$size/" \
    -e "s/@DEPENDS@/$depends/" -e "s/@RECOMMENDS@/$recommends/" -e "s/@BUILT_USING@/$built_using/" \
    -e '/^Built-Using: $/d' "$here/control.in" > "$stage/DEBIAN/control"
# md5sums, as dpkg --verify reads them
(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z | xargs -0 md5sum) > "$stage/DEBIAN/md5sums"
chmod 0644 "$stage/DEBIAN/control" "$stage/DEBIAN/md5sums"
install -m 0755 "$here/prerm" "$stage/DEBIAN/prerm" # removes the kubeadm alternative, when chosen

mkdir -p "$out"
deb=$out/moonadm_${version}_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb.part" >/dev/null
mv "$deb.part" "$deb"
echo "deb: $deb ($(du -k "$deb" | cut -f1) KiB)"
echo "deb: Depends: $depends"
echo "deb: Recommends: $recommends"
echo "deb: Built-Using: ${built_using:-(nothing linked statically)}"
