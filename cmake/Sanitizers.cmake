# Applies FERRY_SANITIZE to every target of the build.
if(FERRY_SANITIZE)
  add_compile_options(-fsanitize=${FERRY_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${FERRY_SANITIZE})
  add_compile_definitions(FERRY_SANITIZED=1)
endif()
