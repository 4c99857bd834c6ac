"""A real S3-compatible object store on loopback for the tests (issue 31 item 5).

``build`` makes SeaweedFS's ``weed`` from its Go module source into ``.work/objectstore/``;
``server.object_store()`` starts ``weed mini`` on free loopback ports and yields a ready
``pyarrow.fs.S3FileSystem`` and the URI/storage options other code uses.
"""
