# verify/ explorers, oracles, scenarios, replay and mutation score (issue 5). Included from
# verify/CMakeLists.txt.
target_sources(ftsim_verify PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/src/Scenario.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/ScenarioInstance.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/ScenarioKernel.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/Fuzz.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/ChromeTrace.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/Oracle.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/Explore.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/Replay.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/Mutants.cpp)
target_link_libraries(ftsim_verify PRIVATE tomlplusplus::tomlplusplus nlohmann_json::nlohmann_json)
