# ferry_warnings: the warning policy as an INTERFACE target (ccache style).
# -Werror only when FERRY_WERROR is on (dev and CI presets).
add_library(ferry_warnings INTERFACE)
target_compile_options(ferry_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Woverloaded-virtual
  -Wold-style-cast -Wformat=2 -Wimplicit-fallthrough -Wconversion -Wsign-conversion
  -Wno-missing-field-initializers)
if(FERRY_WERROR)
  target_compile_options(ferry_warnings INTERFACE -Werror)
endif()
