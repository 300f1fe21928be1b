# A JDK image with fasthprof installed as a Debian package (README.md "Installing the package"):
# the first stage builds the package from this tree with Debian's own tools, the second installs
# it into a Debian JDK image, where `java -agentlib:hprof=...` then needs no setup.
#   docker build -t fasthprof .
#   docker run --rm fasthprof java -agentlib:hprof=heap=sites -version
# Both stages are the same Debian release: the package depends on that release's libraries.
FROM debian:bookworm AS package
WORKDIR /src/fasthprof
COPY . .
RUN apt-get update \
 && apt-get install -y --no-install-recommends dpkg-dev debhelper \
 && apt-get build-dep -y ./ \
 && dpkg-buildpackage -b -us -uc \
 && mkdir /packages \
 && mv ../fasthprof_*.deb /packages/

FROM debian:bookworm-slim
COPY --from=package /packages/ /tmp/packages/
# The slim image leaves out manual pages, and the JDK's postinst links one into man1.
RUN mkdir -p /usr/share/man/man1 \
 && apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jdk-headless /tmp/packages/fasthprof_*.deb \
 && rm -rf /var/lib/apt/lists/* /tmp/packages
