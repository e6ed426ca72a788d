"""The dashboard's routes, at the site root. uid and key are query parameters (see memories.views)."""

from django.contrib.auth import views as auth_views
from django.urls import path

from memories import views

app_name = "dashboard"

urlpatterns = [
    path("", views.overview, name="overview"),
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", views.LogoutView.as_view(), name="logout"),
    path("users/", views.user_list, name="users"),
    path("user/", views.user_memories, name="user"),
    path("user/forget/", views.user_forget, name="user-forget"),
    path("memory/", views.entry_detail, name="entry"),
    path("memory/new/", views.entry_create, name="entry-create"),
    path("memory/edit/", views.entry_edit, name="entry-edit"),
    path("memory/delete/", views.entry_delete, name="entry-delete"),
    path("memory/restore/", views.entry_restore, name="entry-restore"),
    path("trash/", views.trash, name="trash"),
    path("held/", views.held_writes, name="held"),
    path("held/decide/", views.held_write_decide, name="held-decide"),
    path("token/", views.api_token, name="token"),
]
