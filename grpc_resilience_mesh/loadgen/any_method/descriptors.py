"""Descriptor pools from file descriptors: those a server sent by reflection or those of a
FileDescriptorSet file (`protoc --descriptor_set_out=F --include_imports`)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from google.protobuf import descriptor_database, descriptor_pb2, descriptor_pool
from google.protobuf.message import DecodeError

from grpc_resilience_mesh.loadgen.any_method.method import LoadInputError


def services_of(files: Iterable[descriptor_pb2.FileDescriptorProto]) -> list[str]:
    """The full names of the services the files declare."""
    return [
        f"{file.package}.{service.name}" if file.package else service.name
        for file in files
        for service in file.service
    ]


def missing_dependencies(files: dict[str, descriptor_pb2.FileDescriptorProto]) -> list[str]:
    """The files some of `files` import that are not among them."""
    return sorted({dep for file in files.values() for dep in file.dependency} - files.keys())


def from_default_pool(name: str) -> descriptor_pb2.FileDescriptorProto | None:
    """`name` as this process knows it (the well-known types, any imported _pb2), or None."""
    try:
        found = descriptor_pool.Default().FindFileByName(name)
    except KeyError:
        return None
    proto = descriptor_pb2.FileDescriptorProto()
    found.CopyToProto(proto)
    return proto


def pool_of(files: dict[str, descriptor_pb2.FileDescriptorProto]) -> descriptor_pool.DescriptorPool:
    """A pool of its own over `files` (which must hold every file they import), so two loads'
    messages of the same name never clash with each other or with this process's own."""
    database = descriptor_database.DescriptorDatabase()
    for file in files.values():
        database.Add(file)
    return descriptor_pool.DescriptorPool(descriptor_db=database)


def read_descriptor_set(path: Path) -> dict[str, descriptor_pb2.FileDescriptorProto]:
    """The files of the FileDescriptorSet at `path`, completed from this process's own pool;
    a file it imports that neither holds is named in the error."""
    try:
        parsed = descriptor_pb2.FileDescriptorSet.FromString(path.read_bytes())
    except OSError as exc:
        raise LoadInputError(f"descriptor_set {path}: {exc.strerror or exc}") from exc
    except DecodeError as exc:
        raise LoadInputError(f"descriptor_set {path}: not a FileDescriptorSet ({exc})") from exc
    files = {file.name: file for file in parsed.file}
    while missing := missing_dependencies(files):
        for name in missing:
            found = from_default_pool(name)
            if found is None:
                raise LoadInputError(
                    f"descriptor_set {path} lacks {name!r}, which it imports"
                    " (build it with protoc --include_imports)"
                )
            files[name] = found
    return files
