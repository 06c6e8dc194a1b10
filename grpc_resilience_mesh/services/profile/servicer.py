"""ProfileService: profiles of the seeded customers."""

from __future__ import annotations

import grpc

from grpc_resilience_mesh.services.contracts.fields import check_user_id, checked_fields, known_user
from grpc_resilience_mesh.services.runtime.refusal import abort
from grpc_resilience_mesh.services.runtime.server import Runtime, Service
from grpc_resilience_mesh.services.v1 import profile_pb2, profile_pb2_grpc


class ProfileServicer(profile_pb2_grpc.ProfileServiceServicer):
    """Answers GetProfile; NOT_FOUND for a well-formed id that is not in the catalogue."""

    async def GetProfile(
        self, request: profile_pb2.GetProfileRequest, context: grpc.aio.ServicerContext
    ) -> profile_pb2.GetProfileResponse:
        async with checked_fields(context):
            user_id = check_user_id(request.user_id)
        user = known_user(user_id)
        if user is None:
            await abort(context, grpc.StatusCode.NOT_FOUND, f"user_id: no user {user_id!r}")
        return profile_pb2.GetProfileResponse(
            profile=profile_pb2.Profile(
                user_id=user.user_id,
                display_name=user.display_name,
                email=user.email,
                interests=list(user.interests),
                tier=user.tier,
            )
        )


async def build(runtime: Runtime) -> Service:
    servicer = ProfileServicer()
    return Service(
        names=[profile_pb2.DESCRIPTOR.services_by_name["ProfileService"].full_name],
        register=lambda server: profile_pb2_grpc.add_ProfileServiceServicer_to_server(
            servicer, server
        ),
    )
