# normgrad::sentencepiece — Google's sentencepiece (libsentencepiece-dev): subword units for the
# translation data (data/subword_tokenizer.cpp), trainer and processor. An imported target, read
# by the build and by the installed package configuration alike, so that consumers of a static
# normgrad link the same libraries.
if(NOT TARGET normgrad::sentencepiece)
  find_path(_normgrad_spm_include sentencepiece_processor.h)
  find_library(_normgrad_spm_library NAMES sentencepiece)
  find_library(_normgrad_spm_train_library NAMES sentencepiece_train)
  if(NOT _normgrad_spm_include OR NOT _normgrad_spm_library OR NOT _normgrad_spm_train_library)
    message(FATAL_ERROR "normgrad: sentencepiece not found. Install it with: apt-get install "
                        "libsentencepiece-dev (or run scripts/setup)")
  endif()
  add_library(normgrad::sentencepiece INTERFACE IMPORTED)
  target_include_directories(normgrad::sentencepiece INTERFACE ${_normgrad_spm_include})
  target_link_libraries(normgrad::sentencepiece INTERFACE ${_normgrad_spm_train_library}
                                                          ${_normgrad_spm_library})
endif()
