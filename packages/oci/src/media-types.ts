export const OCI_INDEX = "application/vnd.oci.image.index.v1+json";
export const OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json";
export const OCI_CONFIG = "application/vnd.oci.image.config.v1+json";
export const OCI_LAYER_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip";
export const OCI_LAYER_TAR = "application/vnd.oci.image.layer.v1.tar";
export const DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json";
export const DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json";
export const DOCKER_LAYER_GZIP = "application/vnd.docker.image.rootfs.diff.tar.gzip";

export const INDEX_TYPES: readonly string[] = [OCI_INDEX, DOCKER_LIST];
export const MANIFEST_TYPES: readonly string[] = [OCI_MANIFEST, DOCKER_MANIFEST];
/** Sent on every manifest request: without it some registries answer with schema1 or a 404. */
export const MANIFEST_ACCEPT = [OCI_INDEX, DOCKER_LIST, OCI_MANIFEST, DOCKER_MANIFEST].join(", ");

export const GZIP_LAYER_TYPES: readonly string[] = [OCI_LAYER_GZIP, DOCKER_LAYER_GZIP];
export const LAYER_TYPES: readonly string[] = [...GZIP_LAYER_TYPES, OCI_LAYER_TAR];
