# normgrad::sentencepiece — Google's sentencepiece (libsentencepiece-dev): subword units for the
# text toolkit (text/subword_tokenizer.cpp), trainer and processor. An imported target, made by
# the build and by the installed package configuration alike, so that consumers of a static
# normgrad::text link the same libraries. Where sentencepiece is missing, no target is made and
# NORMGRAD_SENTENCEPIECE_FOUND is false; the caller decides whether that is an error.
set(NORMGRAD_SENTENCEPIECE_FOUND FALSE)
if(TARGET normgrad::sentencepiece)
  set(NORMGRAD_SENTENCEPIECE_FOUND TRUE)
else()
  find_path(_normgrad_spm_include sentencepiece_processor.h)
  find_library(_normgrad_spm_library NAMES sentencepiece)
  find_library(_normgrad_spm_train_library NAMES sentencepiece_train)
  if(_normgrad_spm_include AND _normgrad_spm_library AND _normgrad_spm_train_library)
    add_library(normgrad::sentencepiece INTERFACE IMPORTED)
    target_include_directories(normgrad::sentencepiece INTERFACE ${_normgrad_spm_include})
    target_link_libraries(normgrad::sentencepiece INTERFACE ${_normgrad_spm_train_library}
                                                            ${_normgrad_spm_library})
    set(NORMGRAD_SENTENCEPIECE_FOUND TRUE)
  endif()
endif()
