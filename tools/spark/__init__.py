"""Spark for the tests: Delta and S3A jars (spark.mk, the poms) and a standalone cluster on loopback (cluster.py)."""
