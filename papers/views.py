"""Paper pages."""

from django.http import HttpResponse


def paper_detail(request, arxiv_id):
    return HttpResponse("TODO")


def paper_detail_local(request, pk):
    return HttpResponse("TODO")
