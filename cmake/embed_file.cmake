# Turns one file into a C source holding its bytes, run at build time:
#   cmake -DIN=page.html -DOUT=page.c -DNAME=symbol -P embed_file.cmake
# defines `const unsigned char NAME[]` (the bytes plus a NUL, so the page can
# also be used as a C string) and `const size_t NAME_len` (without the NUL).
# add_custom_command lists IN as a dependency, so editing the file rebuilds it.
if(NOT IN OR NOT OUT OR NOT NAME)
  message(FATAL_ERROR "embed_file.cmake: give -DIN=file -DOUT=file.c -DNAME=symbol")
endif()
if(NOT NAME MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
  message(FATAL_ERROR "embed_file.cmake: '${NAME}' is not a C identifier")
endif()
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" nhex)
math(EXPR nbytes "${nhex} / 2")
# "3c21..." -> "0x3c,0x21,...", then a line break after every 16 bytes
# (CMake regexes have no {n} counts, hence the repeated pattern).
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REPEAT "0x[0-9a-f][0-9a-f]," 16 row)
string(REGEX REPLACE "(${row})" "\\1\n    " bytes "${bytes}")
get_filename_component(base "${IN}" NAME)
get_filename_component(outdir "${OUT}" DIRECTORY)
file(MAKE_DIRECTORY "${outdir}")
# Written to a temp file and renamed, so an interrupted build never leaves a
# half-written source that a later build would compile.
file(WRITE "${OUT}.tmp"
  "/* Generated from ${base} by cmake/embed_file.cmake; do not edit. */\n"
  "#include <stddef.h>\n\n"
  "extern const unsigned char ${NAME}[];\n"
  "extern const size_t ${NAME}_len;\n\n"
  "const unsigned char ${NAME}[] = {\n    ${bytes}0x00};\n"
  "const size_t ${NAME}_len = ${nbytes};\n")
file(RENAME "${OUT}.tmp" "${OUT}")
