# install: what `cmake --install build [--prefix P] [--component C]` puts where, in three
# components that are the three Debian packages (debian/*.install pick the same files):
#
#   cli      bin/drover, drover(1), bash and zsh completion
#   droverd  sbin/droverd, droverd(8), droverd.conf(5), its systemd unit, the shipped
#            catalogue (share/drover/catalog), the dashboard (share/drover/ui), the
#            Prometheus rules and Grafana dashboard (share/drover/prometheus), the OpenAPI
#            document (share/drover/openapi.yaml; droverd also serves it), the
#            example /etc/drover/droverd.conf, the HAProxy example
#   worker   sbin/drover-worker, drover-worker(8), drover-worker.conf(5), its unit, the
#            plugins (lib/drover/plugins/NAME/), sbin/drover-image (scripts/image), the
#            example /etc/drover/drover-worker.conf
#
# The daemons are in sbin: only an administrator starts them (through systemd). The
# sysusers entries are the packages' (debian/*.sysusers): cmake --install leaves users alone.
# The man pages and completions are generated at build time from the programs' own tables
# (src/bin/CMakeLists.txt), so what is installed is what --help says.
set(DROVER_SHARE ${CMAKE_BINARY_DIR}/share)
set(DROVER_DATA_INSTALL_DIR ${CMAKE_INSTALL_DATADIR}/drover)
set(DROVER_CONF_INSTALL_DIR ${CMAKE_INSTALL_FULL_SYSCONFDIR}/drover)

install(TARGETS drover RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT cli)
install(FILES ${DROVER_SHARE}/man/man1/drover.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT cli)
install(FILES ${DROVER_SHARE}/bash-completion/completions/drover
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions COMPONENT cli)
install(FILES ${DROVER_SHARE}/zsh/site-functions/_drover
        DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions COMPONENT cli)

install(TARGETS droverd RUNTIME DESTINATION ${CMAKE_INSTALL_SBINDIR} COMPONENT droverd)
install(FILES conf/systemd/droverd.service DESTINATION ${DROVER_SYSTEMD_UNIT_DIR} COMPONENT droverd)
install(FILES conf/droverd.conf DESTINATION ${DROVER_CONF_INSTALL_DIR} COMPONENT droverd)
install(DIRECTORY conf/catalog DESTINATION ${DROVER_DATA_INSTALL_DIR} USE_SOURCE_PERMISSIONS
        COMPONENT droverd)
install(DIRECTORY ui/ DESTINATION ${DROVER_DATA_INSTALL_DIR}/ui COMPONENT droverd)
install(FILES conf/prometheus/drover.rules.yml conf/prometheus/grafana-dashboard.json
        DESTINATION ${DROVER_DATA_INSTALL_DIR}/prometheus COMPONENT droverd)
install(FILES conf/haproxy.cfg DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples COMPONENT droverd)
install(FILES docs/openapi.yaml DESTINATION ${DROVER_DATA_INSTALL_DIR} COMPONENT droverd)

install(TARGETS drover-worker RUNTIME DESTINATION ${CMAKE_INSTALL_SBINDIR} COMPONENT worker)
install(FILES conf/systemd/drover-worker.service DESTINATION ${DROVER_SYSTEMD_UNIT_DIR}
        COMPONENT worker)
install(FILES conf/drover-worker.conf DESTINATION ${DROVER_CONF_INSTALL_DIR} COMPONENT worker)
install(PROGRAMS scripts/image DESTINATION ${CMAKE_INSTALL_SBINDIR} RENAME drover-image
        COMPONENT worker)
# Every plugin as the build lays it out: NAME/plugin.json and NAME/executable.
install(DIRECTORY ${CMAKE_BINARY_DIR}/plugins/ DESTINATION ${DROVER_PLUGIN_INSTALL_DIR}
        USE_SOURCE_PERMISSIONS COMPONENT worker)

# drover-image(8) from scripts/image's own comment (`scripts/image man`).
add_custom_command(OUTPUT ${DROVER_SHARE}/man/man8/drover-image.8
  COMMAND ${CMAKE_COMMAND} -E make_directory ${DROVER_SHARE}/man/man8
  COMMAND sh -c "\"$1\" man > \"$2\"" sh ${DROVER_SOURCE_DIR}/scripts/image
          ${DROVER_SHARE}/man/man8/drover-image.8
  DEPENDS ${DROVER_SOURCE_DIR}/scripts/image VERBATIM)
add_custom_target(drover_image_man ALL DEPENDS ${DROVER_SHARE}/man/man8/drover-image.8)

foreach(page droverd.8 droverd.conf.5 drover-worker.8 drover-worker.conf.5 drover-image.8)
  string(REGEX REPLACE ".*\\.([0-9])$" "\\1" section ${page})
  set(component droverd)
  if(page MATCHES "^drover-(worker|image)")
    set(component worker)
  endif()
  install(FILES ${DROVER_SHARE}/man/man${section}/${page}
          DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section} COMPONENT ${component})
endforeach()
