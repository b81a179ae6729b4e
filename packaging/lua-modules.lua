-- packaging/build-deb.sh: where the binary's Lua finds the C modules the scripts require at run
-- time (Debian's lua-cjson and lua-luv install them on Lua 5.4's cpath). Prints "NAME PATH" lines.
for _, name in ipairs(arg) do
  print(name, package.searchpath(name, package.cpath) or "-")
end
