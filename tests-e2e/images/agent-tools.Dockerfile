# The e2e suite's agent image sandboxd.local/agent-tools:dev: the image toolrunner/Dockerfile.agent builds
# with the sample agent (toolrunner/sample_agent/agent.py), plus what the suite attacks with from inside tool pods.
ARG AGENT
FROM ${AGENT}
USER root
# The escape probe: the e2e suite attacks from inside tool pods with it (a hostile tool could carry anything).
COPY probe/ /opt/sandboxd/probe/
# A VOLUME, as a hostile agent image may declare, on a directory any uid may write (tool pods run as a uid of their
# own from sandboxUidRange): were the runtime to honour it, every tool call would get a writable /data outside the
# read-only root and outside the ephemeral-storage limit. The harness's containerd ignores it
# (ignore_image_defined_volumes); ToolPodHardeningIT checks that /data stays read-only.
RUN mkdir -p /data && chmod 1777 /data \
    && echo "world-writable (1777): only the read-only root keeps a tool from writing here" > /data/README
VOLUME /data
# A hostile image's groups: /etc/passwd names uid 1999999 (the top of sandboxUidRange) and /etc/group makes it a member
# of group 4242. containerd adds such a group to the container's processes unless the pod's supplementalGroupsPolicy is
# Strict; an image could list every uid of the range (SupplementalGroupsIT).
RUN echo "e2e-groups:x:1999999:1999999::/nonexistent:/usr/sbin/nologin" >> /etc/passwd \
    && echo "e2e-extra:x:4242:e2e-groups" >> /etc/group
USER 65532:65532
